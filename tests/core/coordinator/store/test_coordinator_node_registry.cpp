// SPDX-License-Identifier: Apache-2.0
// NodeRegistry on a real SQLite file and a real PostgreSQL server: admission inserts then
// updates a node, its state, stage and last-seen time change, and nodes list by state and stage.
#include "DatabaseBackends.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"

#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;

namespace {

NodeAdmission admission(const QString& id,
                        const QString& hardware = QStringLiteral("{\"gpu\":\"RTX 4090\"}")) {
    return {
        id, QStringLiteral("pk-") + id, hardware, QStringLiteral("{\"gflops\":1.5}"), QStringLiteral("0.2.0"),
        1.5};
}

QStringList ids(const std::vector<NodeRecord>& nodes) {
    QStringList out;
    for (const NodeRecord& n : nodes)
        out << n.nodeId;
    return out;
}

} // namespace

class TestCoordinatorNodeRegistry final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void admitInsertsThenUpdates_data() { test::DatabaseBackends::addRows(); }
    void admitInsertsThenUpdates();
    void stateStageAndLastSeen_data() { test::DatabaseBackends::addRows(); }
    void stateStageAndLastSeen();
    void listAndCountByStateAndStage_data() { test::DatabaseBackends::addRows(); }
    void listAndCountByStateAndStage();
    void markStaleOfflineIsOneConditionalUpdate_data() { test::DatabaseBackends::addRows(); }
    void markStaleOfflineIsOneConditionalUpdate();
    void storesTextVerbatim_data() { test::DatabaseBackends::addRows(); }
    void storesTextVerbatim();
};

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
    QCOMPARE(n.benchJson, QStringLiteral("{\"gflops\":1.5}"));
    QCOMPARE(n.clientVersion, QStringLiteral("0.2.0"));
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

    // Online nodes with a stage, summed per stage; "b" left out as admission leaves out the
    // node being admitted.
    NodeAdmission fast = admission(QStringLiteral("d"));
    fast.benchGflops = 2.5;
    QVERIFY(nodes.admit(fast, 3000));
    Result<std::vector<StageTotals>> totals = nodes.stageTotals(QStringLiteral("b"));
    QVERIFY2(totals, failure(totals));
    QCOMPARE(totals->size(), std::size_t(2));
    QCOMPARE((*totals)[0].stage, 0);
    QCOMPARE((*totals)[0].nodes, qint64(1));
    QCOMPARE((*totals)[0].gflops, 1.5);
    QCOMPARE((*totals)[1].stage, 1);
    QCOMPARE((*totals)[1].nodes, qint64(1));
    QCOMPARE((*totals)[1].gflops, 2.5);
}

void TestCoordinatorNodeRegistry::markStaleOfflineIsOneConditionalUpdate() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    QVERIFY(nodes.admit(admission(QStringLiteral("old")), 1000));
    QVERIFY(nodes.admit(admission(QStringLiteral("edge")), 2000));
    QVERIFY(nodes.admit(admission(QStringLiteral("fresh")), 3000));
    QVERIFY(nodes.admit(admission(QStringLiteral("gone")), 500));
    QVERIFY(nodes.setState(QStringLiteral("gone"), NodeState::Offline, 500));

    Result<int> n = nodes.markStaleOffline(2000);
    QVERIFY2(n, failure(n));
    QCOMPARE(*n, 1); // "gone" was offline already; "edge" was seen exactly at the cutoff
    QCOMPARE(nodes.find(QStringLiteral("old")).value()->state, NodeState::Offline);
    QCOMPARE(nodes.find(QStringLiteral("old")).value()->lastSeenMs, qint64(1000));
    QCOMPARE(nodes.find(QStringLiteral("edge")).value()->state, NodeState::Online);
    QCOMPARE(nodes.find(QStringLiteral("fresh")).value()->state, NodeState::Online);
    QCOMPARE(nodes.markStaleOffline(2000).value(), 0);
    QCOMPARE(nodes.markStaleOffline(10'000).value(), 2);
    QCOMPARE(nodes.count(NodeState::Online).value(), qint64(0));
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
