// NodeRegistry on a real SQLite file and a real PostgreSQL server: admission inserts then
// updates a node, its state, stage and last-seen time change, and nodes list by state and stage.
#include "PostgresServer.h"
#include "coordinator/Database.h"
#include "coordinator/NodeRegistry.h"

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

NodeAdmission admission(const QString& id,
                        const QString& hardware = QStringLiteral("{\"gpu\":\"RTX 4090\"}")) {
    return {id, QStringLiteral("pk-") + id, hardware, QStringLiteral("{\"tflops\":80}"),
            QStringLiteral("0.1.0")};
}

QStringList ids(const std::vector<NodeRecord>& nodes) {
    QStringList out;
    for (const NodeRecord& n : nodes)
        out << n.nodeId;
    return out;
}

} // namespace

class TestCoordinatorNodeRegistry final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase() { m_pg.reset(); }

    void admitInsertsThenUpdates_data() { backends(); }
    void admitInsertsThenUpdates();
    void stateStageAndLastSeen_data() { backends(); }
    void stateStageAndLastSeen();
    void listAndCountByStateAndStage_data() { backends(); }
    void listAndCountByStateAndStage();
    void storesTextVerbatim_data() { backends(); }
    void storesTextVerbatim();

private:
    void backends();
    QString freshUrl();
    std::unique_ptr<Database> open(const QString& url);

    QTemporaryDir m_dir;
    std::unique_ptr<test::PostgresServer> m_pg;
    int m_files = 0;
};

void TestCoordinatorNodeRegistry::initTestCase() {
    QVERIFY(m_dir.isValid());
    if (test::PostgresServer::findBinDir().isEmpty())
        return; // the postgresql rows skip
    Result<std::unique_ptr<test::PostgresServer>> pg = test::PostgresServer::start();
    QVERIFY2(pg, failure(pg));
    m_pg = std::move(*pg);
}

void TestCoordinatorNodeRegistry::backends() {
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
    QTest::newRow("postgresql") << QStringLiteral("postgresql");
}

// A new, empty database for the current row; empty when the row was skipped or failed.
QString TestCoordinatorNodeRegistry::freshUrl() {
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
std::unique_ptr<Database> TestCoordinatorNodeRegistry::open(const QString& url) {
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

void TestCoordinatorNodeRegistry::admitInsertsThenUpdates() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    Status s = nodes.admit(admission(QStringLiteral("n1")), 1000);
    QVERIFY2(s, failure(s));

    Result<std::optional<NodeRecord>> found = nodes.find(QStringLiteral("n1"));
    QVERIFY2(found, failure(found));
    QVERIFY(found->has_value());
    const NodeRecord& n = **found;
    QCOMPARE(n.publicKey, QStringLiteral("pk-n1"));
    QCOMPARE(n.firstSeenMs, qint64(1000));
    QCOMPARE(n.lastSeenMs, qint64(1000));
    QCOMPARE(n.state, NodeState::Online);
    QCOMPARE(n.hardwareJson, QStringLiteral("{\"gpu\":\"RTX 4090\"}"));
    QCOMPARE(n.benchJson, QStringLiteral("{\"tflops\":80}"));
    QCOMPARE(n.clientVersion, QStringLiteral("0.1.0"));
    QCOMPARE(n.stage, std::optional<int>());

    // The node comes back later with a new GPU: same node, first seen unchanged, stage kept.
    QVERIFY(nodes.setStage(QStringLiteral("n1"), 3));
    QVERIFY(nodes.setState(QStringLiteral("n1"), NodeState::Offline, 1500));
    s = nodes.admit(admission(QStringLiteral("n1"), QStringLiteral("{\"gpu\":\"RTX 5090\"}")), 2000);
    QVERIFY2(s, failure(s));
    found = nodes.find(QStringLiteral("n1"));
    QVERIFY(found && found->has_value());
    QCOMPARE((*found)->firstSeenMs, qint64(1000));
    QCOMPARE((*found)->lastSeenMs, qint64(2000));
    QCOMPARE((*found)->state, NodeState::Online);
    QCOMPARE((*found)->hardwareJson, QStringLiteral("{\"gpu\":\"RTX 5090\"}"));
    QCOMPARE((*found)->stage, std::optional<int>(3));
    QCOMPARE(nodes.count().valueOr(-1), qint64(1));

    found = nodes.find(QStringLiteral("nobody"));
    QVERIFY(found);
    QVERIFY(!found->has_value());
}

void TestCoordinatorNodeRegistry::stateStageAndLastSeen() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    QVERIFY(nodes.admit(admission(QStringLiteral("n1")), 1000));

    Status s = nodes.setState(QStringLiteral("n1"), NodeState::Offline, 3000);
    QVERIFY2(s, failure(s));
    QCOMPARE(nodes.find(QStringLiteral("n1")).value()->state, NodeState::Offline);
    QCOMPARE(nodes.find(QStringLiteral("n1")).value()->lastSeenMs, qint64(3000));

    QVERIFY(nodes.touch(QStringLiteral("n1"), 4000));
    QCOMPARE(nodes.find(QStringLiteral("n1")).value()->lastSeenMs, qint64(4000));

    QVERIFY(nodes.setStage(QStringLiteral("n1"), 0));
    QCOMPARE(nodes.find(QStringLiteral("n1")).value()->stage, std::optional<int>(0));
    QVERIFY(nodes.setStage(QStringLiteral("n1"), std::nullopt));
    QCOMPARE(nodes.find(QStringLiteral("n1")).value()->stage, std::optional<int>());

    for (const Status& unknown :
         {nodes.setState(QStringLiteral("ghost"), NodeState::Online, 1),
          nodes.touch(QStringLiteral("ghost"), 1), nodes.setStage(QStringLiteral("ghost"), 1)}) {
        QVERIFY(!unknown);
        QCOMPARE(unknown.message(), std::string("unknown node ghost"));
    }
}

void TestCoordinatorNodeRegistry::listAndCountByStateAndStage() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    for (const char* id : {"d", "b", "a", "c", "e"})
        QVERIFY(nodes.admit(admission(QLatin1String(id)), 1000));
    QVERIFY(nodes.setStage(QStringLiteral("a"), 0));
    QVERIFY(nodes.setStage(QStringLiteral("b"), 1));
    QVERIFY(nodes.setStage(QStringLiteral("c"), 1));
    QVERIFY(nodes.setStage(QStringLiteral("d"), 1));
    QVERIFY(nodes.setState(QStringLiteral("c"), NodeState::Offline, 2000));
    QVERIFY(nodes.setState(QStringLiteral("e"), NodeState::Offline, 2000));

    Result<std::vector<NodeRecord>> all = nodes.list();
    QVERIFY2(all, failure(all));
    QCOMPARE(ids(*all), QStringList({QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"),
                                     QStringLiteral("d"), QStringLiteral("e")}));
    QCOMPARE(ids(nodes.list(NodeState::Online).value()),
             QStringList({QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("d")}));
    QCOMPARE(ids(nodes.list(std::nullopt, 1).value()),
             QStringList({QStringLiteral("b"), QStringLiteral("c"), QStringLiteral("d")}));
    QCOMPARE(ids(nodes.list(NodeState::Online, 1).value()),
             QStringList({QStringLiteral("b"), QStringLiteral("d")}));
    QCOMPARE(ids(nodes.list(NodeState::Offline, 0).value()), QStringList());

    QCOMPARE(nodes.count().valueOr(-1), qint64(5));
    QCOMPARE(nodes.count(NodeState::Offline).valueOr(-1), qint64(2));
    QCOMPARE(nodes.count(std::nullopt, 1).valueOr(-1), qint64(3));
    QCOMPARE(nodes.count(NodeState::Online, 1).valueOr(-1), qint64(2));
    QCOMPARE(nodes.count(NodeState::Online, 7).valueOr(-1), qint64(0));
}

void TestCoordinatorNodeRegistry::storesTextVerbatim() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    // Values are bound, never spliced into SQL: quotes and SQL stay data.
    const QString hostile =
        QStringLiteral("{\"gpu\":\"x'); DROP TABLE nodes; --\",\"name\":\"Grafikkarte \u00fc\u2603\"}");
    const QString id = QStringLiteral("n' OR '1'='1");
    QVERIFY(nodes.admit(admission(id, hostile), 1000));
    Result<std::optional<NodeRecord>> found = nodes.find(id);
    QVERIFY(found && found->has_value());
    QCOMPARE((*found)->hardwareJson, hostile);
    QVERIFY(!nodes.find(QStringLiteral("n")).value().has_value());
    QCOMPARE(nodes.count().valueOr(-1), qint64(1));
}

QTEST_GUILESS_MAIN(TestCoordinatorNodeRegistry)
#include "test_coordinator_node_registry.moc"
