// SessionStore on a real SQLite file and a real PostgreSQL server: a session is found while
// valid, heartbeats, expires, is revoked, is purged, and only exists for a registered node.
#include "PostgresServer.h"
#include "coordinator/Database.h"
#include "coordinator/NodeRegistry.h"
#include "coordinator/SessionStore.h"

#include <QTemporaryDir>
#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using namespace std::chrono_literals;

namespace {

// QVERIFY2 builds its message even when the check passes: read it only from a failure.
template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

Status admit(Database& db, const QString& nodeId) {
    return NodeRegistry(db).admit(
        {nodeId, QStringLiteral("pk"), QStringLiteral("{}"), QStringLiteral("{}"), QStringLiteral("0.1.0")},
        0);
}

} // namespace

class TestCoordinatorSessionStore final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase() { m_pg.reset(); }

    void validUntilExpiry_data() { backends(); }
    void validUntilExpiry();
    void revokedSessionsEnd_data() { backends(); }
    void revokedSessionsEnd();
    void purgeDropsOnlyDeadSessions_data() { backends(); }
    void purgeDropsOnlyDeadSessions();
    void refusesUnknownNodesAndDuplicates_data() { backends(); }
    void refusesUnknownNodesAndDuplicates();

private:
    void backends();
    QString freshUrl();
    std::unique_ptr<Database> open(const QString& url);

    QTemporaryDir m_dir;
    std::unique_ptr<test::PostgresServer> m_pg;
    int m_files = 0;
};

void TestCoordinatorSessionStore::initTestCase() {
    QVERIFY(m_dir.isValid());
    if (test::PostgresServer::findBinDir().isEmpty())
        return; // the postgresql rows skip
    Result<std::unique_ptr<test::PostgresServer>> pg = test::PostgresServer::start();
    QVERIFY2(pg, failure(pg));
    m_pg = std::move(*pg);
}

void TestCoordinatorSessionStore::backends() {
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
    QTest::newRow("postgresql") << QStringLiteral("postgresql");
}

// A new, empty database for the current row; empty when the row was skipped or failed.
QString TestCoordinatorSessionStore::freshUrl() {
    QFETCH(QString, backend);
    if (backend == u"sqlite")
        return QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("db%1.sqlite").arg(++m_files));
    if (!m_pg) {
        QTest::qSkip(test::PostgresServer::kNotInstalled, __FILE__, __LINE__);
        return {};
    }
    Result<QString> url = m_pg->createDatabase();
    if (!url) {
        QTest::qFail(url.message().c_str(), __FILE__, __LINE__);
        return {};
    }
    return *url;
}

// Opens and migrates; null (and the test failed) on error.
std::unique_ptr<Database> TestCoordinatorSessionStore::open(const QString& url) {
    if (url.isEmpty())
        return nullptr;
    Result<std::unique_ptr<Database>> db = Database::open(url, m_dir.path());
    Result<int> migrated = db ? (*db)->migrate() : Result<int>(db.error());
    if (!migrated) {
        QTest::qFail(migrated.message().c_str(), __FILE__, __LINE__);
        return nullptr;
    }
    return std::move(*db);
}

void TestCoordinatorSessionStore::validUntilExpiry() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(admit(*db, QStringLiteral("n1")));
    SessionStore sessions(*db);
    Status s = sessions.create(QStringLiteral("hash-1"), QStringLiteral("n1"), 1000, 60s);
    QVERIFY2(s, failure(s));

    Result<std::optional<SessionRecord>> found = sessions.findValid(QStringLiteral("hash-1"), 2000);
    QVERIFY2(found, failure(found));
    QVERIFY(found->has_value());
    QCOMPARE((*found)->nodeId, QStringLiteral("n1"));
    QCOMPARE((*found)->createdAtMs, qint64(1000));
    QCOMPARE((*found)->expiresAtMs, qint64(61000));
    QCOMPARE((*found)->lastHeartbeatMs, qint64(1000));
    QCOMPARE((*found)->revoked, false);

    s = sessions.heartbeat(QStringLiteral("hash-1"), 30000);
    QVERIFY2(s, failure(s));
    QCOMPARE(sessions.findValid(QStringLiteral("hash-1"), 30000).value()->lastHeartbeatMs, qint64(30000));

    // Expired at its expiry time, not a millisecond later.
    QVERIFY(sessions.findValid(QStringLiteral("hash-1"), 60999).value().has_value());
    QVERIFY(!sessions.findValid(QStringLiteral("hash-1"), 61000).value().has_value());
    s = sessions.heartbeat(QStringLiteral("hash-1"), 61000);
    QVERIFY(!s);
    QCOMPARE(s.message(), std::string("the session is unknown, revoked or expired"));

    QVERIFY(!sessions.findValid(QStringLiteral("hash-unknown"), 2000).value().has_value());
}

void TestCoordinatorSessionStore::revokedSessionsEnd() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(admit(*db, QStringLiteral("n1")));
    QVERIFY(admit(*db, QStringLiteral("n2")));
    SessionStore sessions(*db);
    QVERIFY(sessions.create(QStringLiteral("a"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("b"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("c"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("d"), QStringLiteral("n2"), 0, 1h));

    Status s = sessions.revoke(QStringLiteral("a"));
    QVERIFY2(s, failure(s));
    QVERIFY(!sessions.findValid(QStringLiteral("a"), 1).value().has_value());
    QVERIFY(!sessions.heartbeat(QStringLiteral("a"), 1));
    QVERIFY(!sessions.revoke(QStringLiteral("nope")));

    // A banned node loses every live session at once; other nodes keep theirs.
    Result<int> revoked = sessions.revokeNode(QStringLiteral("n1"));
    QVERIFY2(revoked, failure(revoked));
    QCOMPARE(*revoked, 2);
    QVERIFY(!sessions.findValid(QStringLiteral("b"), 1).value().has_value());
    QVERIFY(!sessions.findValid(QStringLiteral("c"), 1).value().has_value());
    QVERIFY(sessions.findValid(QStringLiteral("d"), 1).value().has_value());
}

void TestCoordinatorSessionStore::purgeDropsOnlyDeadSessions() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(admit(*db, QStringLiteral("n1")));
    SessionStore sessions(*db);
    QVERIFY(sessions.create(QStringLiteral("expired"), QStringLiteral("n1"), 0, 10s));
    QVERIFY(sessions.create(QStringLiteral("revoked"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("live"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.revoke(QStringLiteral("revoked")));

    Result<int> purged = sessions.purge(10'000);
    QVERIFY2(purged, failure(purged));
    QCOMPARE(*purged, 2);
    QVERIFY(sessions.findValid(QStringLiteral("live"), 10'000).value().has_value());
    QCOMPARE(sessions.purge(10'000).valueOr(-1), 0);
}

void TestCoordinatorSessionStore::refusesUnknownNodesAndDuplicates() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    SessionStore sessions(*db);
    // The foreign key holds on SQLite too (PRAGMA foreign_keys).
    Status s = sessions.create(QStringLiteral("h"), QStringLiteral("ghost"), 0, 1h);
    QVERIFY(!s);
    QVERIFY2(QString::fromStdString(s.message()).contains(QStringLiteral("FOREIGN KEY"), Qt::CaseInsensitive),
             s.message().c_str());

    QVERIFY(admit(*db, QStringLiteral("n1")));
    QVERIFY(sessions.create(QStringLiteral("h"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(!sessions.create(QStringLiteral("h"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(!sessions.create(QStringLiteral("h2"), QStringLiteral("n1"), 0, 0ms));
}

QTEST_GUILESS_MAIN(TestCoordinatorSessionStore)
#include "test_coordinator_session_store.moc"
