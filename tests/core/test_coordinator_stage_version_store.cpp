// StageVersionStore on a real SQLite file and a real PostgreSQL server: versions of a stage are
// published once, found again intact, and the newest one is the stage's latest.
#include "PostgresServer.h"
#include "coordinator/Database.h"
#include "coordinator/StageVersionStore.h"

#include <QTemporaryDir>
#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

// QVERIFY2 builds its message even when the check passes: read it only from a failure.
template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

StageVersion version(int stage, qint64 v) {
    StageVersion s;
    s.stage = stage;
    s.version = v;
    s.step = v * 400;
    s.file = QStringLiteral("stage-%1/v%2.safetensors").arg(stage).arg(v);
    s.fileSize = 5'000'000'000 + v; // past 32 bits: a real 8B-model stage shard
    s.sha256 = QString(64, QChar(u'a' + int(v % 6)));
    s.manifestJson =
        QStringLiteral("{\"stage\":%1,\"version\":%2,\"note\":\"\u00e9t\u00e9\"}").arg(stage).arg(v);
    s.createdAtMs = 1'700'000'000'000 + v;
    return s;
}

void compareVersions(const StageVersion& a, const StageVersion& b) {
    QCOMPARE(a.stage, b.stage);
    QCOMPARE(a.version, b.version);
    QCOMPARE(a.step, b.step);
    QCOMPARE(a.file, b.file);
    QCOMPARE(a.fileSize, b.fileSize);
    QCOMPARE(a.sha256, b.sha256);
    QCOMPARE(a.manifestJson, b.manifestJson);
    QCOMPARE(a.createdAtMs, b.createdAtMs);
}

} // namespace

class TestCoordinatorStageVersionStore final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase() { m_pg.reset(); }

    void addFindAndLatest_data() { backends(); }
    void addFindAndLatest();
    void publishedOnce_data() { backends(); }
    void publishedOnce();

private:
    void backends();
    QString freshUrl();
    std::unique_ptr<Database> open(const QString& url);

    QTemporaryDir m_dir;
    std::unique_ptr<test::PostgresServer> m_pg;
    int m_files = 0;
};

void TestCoordinatorStageVersionStore::initTestCase() {
    QVERIFY(m_dir.isValid());
    if (test::PostgresServer::findBinDir().isEmpty())
        return; // the postgresql rows skip
    Result<std::unique_ptr<test::PostgresServer>> pg = test::PostgresServer::start();
    QVERIFY2(pg, failure(pg));
    m_pg = std::move(*pg);
}

void TestCoordinatorStageVersionStore::backends() {
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
    QTest::newRow("postgresql") << QStringLiteral("postgresql");
}

// A new, empty database for the current row; empty when the row was skipped or failed.
QString TestCoordinatorStageVersionStore::freshUrl() {
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
std::unique_ptr<Database> TestCoordinatorStageVersionStore::open(const QString& url) {
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

void TestCoordinatorStageVersionStore::addFindAndLatest() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    StageVersionStore versions(*db);
    QVERIFY(!versions.latest(0).value().has_value());

    // Added out of order: latest is the highest version, not the last added.
    for (qint64 v : {2, 10, 1}) {
        Status s = versions.add(version(0, v));
        QVERIFY2(s, failure(s));
    }
    QVERIFY(versions.add(version(1, 3)));

    Result<std::optional<StageVersion>> latest = versions.latest(0);
    QVERIFY2(latest, failure(latest));
    QVERIFY(latest->has_value());
    compareVersions(**latest, version(0, 10));
    compareVersions(versions.latest(1).value().value(), version(1, 3));
    QVERIFY(!versions.latest(2).value().has_value());

    Result<std::optional<StageVersion>> found = versions.find(0, 2);
    QVERIFY2(found, failure(found));
    QVERIFY(found->has_value());
    compareVersions(**found, version(0, 2));
    QVERIFY(!versions.find(0, 3).value().has_value());
    QVERIFY(!versions.find(1, 2).value().has_value());
}

void TestCoordinatorStageVersionStore::publishedOnce() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    StageVersionStore versions(*db);
    QVERIFY(versions.add(version(0, 1)));
    StageVersion other = version(0, 1);
    other.sha256 = QString(64, u'f');
    QVERIFY(!versions.add(other));
    QCOMPARE(versions.find(0, 1).value()->sha256, version(0, 1).sha256);
}

QTEST_GUILESS_MAIN(TestCoordinatorStageVersionStore)
#include "test_coordinator_stage_version_store.moc"
