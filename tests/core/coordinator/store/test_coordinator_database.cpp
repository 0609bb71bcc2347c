// SPDX-License-Identifier: Apache-2.0
// Database: urls, SQLite settings, and migrations on a real SQLite file and a real PostgreSQL
// server: applied once, re-run as a no-op, and a database from a newer coordinator refused.
#include "DatabaseBackends.h"
#include "common/Sql.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"

#include <QFile>
#include <QFileInfo>
#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;

class TestCoordinatorDatabase final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void sqliteDefaultsToDataDir();
    void sqliteRelativePathIsUnderDataDir();
    void sqliteRefusesAFileThatIsNoDatabase();
    void refusesBadUrls_data();
    void refusesBadUrls();
    void passwordIsNeverShown();

    void migrateCreatesTheSchemaOnce_data() { test::DatabaseBackends::addRows(); }
    void migrateCreatesTheSchemaOnce();
    void refusesANewerSchema_data() { test::DatabaseBackends::addRows(); }
    void refusesANewerSchema();
    void writeTransactionCommitsOrRollsBack_data() { test::DatabaseBackends::addRows(); }
    void writeTransactionCommitsOrRollsBack();
};

void TestCoordinatorDatabase::sqliteDefaultsToDataDir() {
    const QString dataDir = backends().dir().filePath(QStringLiteral("defaults"));
    Result<std::unique_ptr<Database>> db = Database::open({}, dataDir);
    QVERIFY2(db, failure(db));
    QCOMPARE((*db)->backend(), Database::Backend::Sqlite);
    QVERIFY(QFileInfo::exists(dataDir + QStringLiteral("/coordinator.sqlite")));

    const QSqlDatabase c = (*db)->connection();
    const auto pragma = [&](const char* name) {
        Result<std::optional<QVariant>> v = sql::scalar(c, QStringLiteral("PRAGMA ") + QLatin1String(name));
        return v && *v ? (*v)->toString() : QString();
    };
    QCOMPARE(pragma("journal_mode"), QStringLiteral("wal"));
    QCOMPARE(pragma("synchronous"), QStringLiteral("1")); // NORMAL
    QCOMPARE(pragma("foreign_keys"), QStringLiteral("1"));
    QCOMPARE(pragma("busy_timeout"), QStringLiteral("5000"));
}

void TestCoordinatorDatabase::sqliteRelativePathIsUnderDataDir() {
    const QString dataDir = backends().dir().filePath(QStringLiteral("relative"));
    Result<std::unique_ptr<Database>> db = Database::open(QStringLiteral("sqlite:state/swarm.db"), dataDir);
    QVERIFY2(db, failure(db));
    QVERIFY(QFileInfo::exists(dataDir + QStringLiteral("/state/swarm.db")));
    QCOMPARE((*db)->displayName(), QStringLiteral("sqlite:") + dataDir + QStringLiteral("/state/swarm.db"));
}

void TestCoordinatorDatabase::sqliteRefusesAFileThatIsNoDatabase() {
    const QString path = backends().dir().filePath(QStringLiteral("garbage.sqlite"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    Result<std::unique_ptr<Database>> db =
        Database::open(QStringLiteral("sqlite:") + path, backends().dir().path());
    QVERIFY(!db);
    QVERIFY2(db.message().find("garbage.sqlite") != std::string::npos, db.message().c_str());
}

void TestCoordinatorDatabase::refusesBadUrls_data() {
    QTest::addColumn<QString>("url");
    QTest::addColumn<QString>("reason");
    QTest::newRow("other scheme") << QStringLiteral("mysql://u:pw@h/db")
                                  << QStringLiteral("unsupported database url scheme \"mysql\"");
    QTest::newRow("bare path") << QStringLiteral("/var/lib/tessera/db.sqlite")
                               << QStringLiteral("database url has no scheme");
    QTest::newRow("bad port") << QStringLiteral("postgresql://u:pw@h:99999/db")
                              << QStringLiteral("invalid PostgreSQL url: Invalid port");
    QTest::newRow("no database") << QStringLiteral("postgresql://u@h/")
                                 << QStringLiteral("names no database");
    QTest::newRow("unknown parameter") << QStringLiteral("postgresql://u@/db?host=/tmp&options=-cx")
                                       << QStringLiteral("options is not supported");
    QTest::newRow("smuggled option") << QStringLiteral("postgresql://u@/db?sslmode=disable%20host%3Devil")
                                     << QStringLiteral("unsupported value");
}

void TestCoordinatorDatabase::refusesBadUrls() {
    QFETCH(QString, url);
    QFETCH(QString, reason);
    Result<std::unique_ptr<Database>> db = Database::open(url, backends().dir().path());
    QVERIFY(!db);
    QVERIFY2(QString::fromStdString(db.message()).contains(reason), db.message().c_str());
    QVERIFY2(db.message().find(":pw@") == std::string::npos, db.message().c_str());
}

void TestCoordinatorDatabase::passwordIsNeverShown() {
    // A socket directory that does not exist: the connection fails at once, no network needed.
    Result<std::unique_ptr<Database>> db =
        Database::open(QStringLiteral("postgresql://tessera:s3cret@/swarm?host=/nonexistent-tessera-dir"),
                       backends().dir().path());
    QVERIFY(!db);
    QVERIFY2(db.message().find("cannot connect to postgresql://tessera@/swarm") != std::string::npos,
             db.message().c_str());
    QVERIFY2(db.message().find("s3cret") == std::string::npos, db.message().c_str());
}

void TestCoordinatorDatabase::migrateCreatesTheSchemaOnce() {
    const QString url = freshUrl();
    if (url.isEmpty())
        return;
    std::unique_ptr<Database> db = openUnmigrated(url);
    QVERIFY(db);
    QCOMPARE(db->schemaVersion().valueOr(-1), 0);

    Result<int> applied = db->migrate();
    QVERIFY2(applied, failure(applied));
    QCOMPARE(*applied, Database::latestSchemaVersion());
    QCOMPARE(db->schemaVersion().valueOr(-1), Database::latestSchemaVersion());
    const QStringList tables = db->connection().tables();
    for (const char* table : {"schema_migrations", "nodes", "sessions", "admission_nonces", "assignments",
                              "stage_versions", "credit_receipts"})
        QVERIFY2(tables.contains(QLatin1String(table)), table);

    // Again, and from a second connection (a restarted coordinator): nothing to do.
    applied = db->migrate();
    QVERIFY2(applied, failure(applied));
    QCOMPARE(*applied, 0);
    std::unique_ptr<Database> again = openUnmigrated(url);
    QVERIFY(again);
    applied = again->migrate();
    QVERIFY2(applied, failure(applied));
    QCOMPARE(*applied, 0);
    Result<std::optional<QVariant>> rows =
        sql::scalar(db->connection(), QStringLiteral("SELECT COUNT(*) FROM schema_migrations"));
    QVERIFY(rows && *rows);
    QCOMPARE((*rows)->toInt(), Database::latestSchemaVersion());
}

void TestCoordinatorDatabase::refusesANewerSchema() {
    const QString url = freshUrl();
    if (url.isEmpty())
        return;
    {
        std::unique_ptr<Database> db = openUnmigrated(url);
        QVERIFY(db);
        QVERIFY(db->migrate());
        // What a future coordinator would leave behind.
        QVERIFY(sql::exec(db->connection(),
                          QStringLiteral("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"),
                          {999, qint64(1)}));
    }
    std::unique_ptr<Database> db = openUnmigrated(url);
    QVERIFY(db);
    Result<int> applied = db->migrate();
    QVERIFY(!applied);
    QVERIFY2(applied.message().find("schema version 999, newer than this coordinator understands") !=
                 std::string::npos,
             applied.message().c_str());
    QCOMPARE(db->schemaVersion().valueOr(-1), 999);
}

void TestCoordinatorDatabase::writeTransactionCommitsOrRollsBack() {
    const QString url = freshUrl();
    if (url.isEmpty())
        return;
    std::unique_ptr<Database> db = openUnmigrated(url);
    QVERIFY(db);
    QVERIFY(db->migrate());
    NodeRegistry nodes(*db);
    const auto admit = [&](const char* id) {
        return nodes.admit({QLatin1String(id), QStringLiteral("key"), QStringLiteral("{}"),
                            QStringLiteral("{}"), QStringLiteral("0.2.0")},
                           1000);
    };

    Status failed = db->writeTransaction([&]() -> Status {
        if (Status s = admit("a"); !s)
            return s;
        return makeError("stop halfway");
    });
    QVERIFY(!failed);
    QCOMPARE(failed.message(), std::string("stop halfway"));
    QCOMPARE(nodes.count().valueOr(-1), qint64(0));

    Status committed = db->writeTransaction([&] { return admit("b"); });
    QVERIFY2(committed, failure(committed));
    QCOMPARE(nodes.count().valueOr(-1), qint64(1));
}

QTEST_GUILESS_MAIN(TestCoordinatorDatabase)
#include "test_coordinator_database.moc"
