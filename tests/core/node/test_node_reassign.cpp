// SPDX-License-Identifier: Apache-2.0
// A node the coordinator moves to another stage, end to end: the real tessera-coordinator (two
// stages) and three real tessera-node processes on loopback. The lone node of one stage is
// SIGKILLed; the coordinator moves one of the other stage's two nodes there (`reassign`); that
// node downloads and loads the new stage's shard on its open session, works on it, and keeps
// only that shard. SIGKILLed and restarted, it comes back on the new stage without a new
// admission.
#include "CoordinatorProcess.h"
#include "NodeProcess.h"
#include "TestSupport.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using namespace tessera::test;

class TestNodeReassign final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void starvedStageTakesANodeThatSwitchesAndKeepsIt();

private:
    QJsonObject status(const QString& dataDir);
    bool waitWorking(const QString& dataDir, int ms, NodeProcess& node);
    QJsonObject coordinatorStatus(const CoordinatorProcess& coordinator, const QString& runDir);
    // The stage shards (by their saved manifests' stage numbers) in a node's shards/.
    static QList<int> shardStages(const QString& dataDir);

    QTemporaryDir m_dir;
};

void TestNodeReassign::initTestCase() {
    QVERIFY(m_dir.isValid());
}

QJsonObject TestNodeReassign::status(const QString& dataDir) {
    const ProcessRun r = runProcess(nodeProgram(), {u"status"_qs, u"--json"_qs, u"--data-dir"_qs, dataDir},
                                    ProcessOptions{oneComputeThread(), false, 10'000});
    return QJsonDocument::fromJson(r.out).object();
}

bool TestNodeReassign::waitWorking(const QString& dataDir, int ms, NodeProcess& node) {
    const bool reached =
        QTest::qWaitFor([&] { return status(dataDir).value(u"state").toString() == u"Working"; }, ms);
    if (!reached)
        qWarning("node log:\n%s", node.log().right(4000).constData());
    return reached;
}

QJsonObject TestNodeReassign::coordinatorStatus(const CoordinatorProcess& coordinator,
                                                const QString& runDir) {
    const ProcessRun r =
        runProcess(u"curl"_qs,
                   {u"-sS"_qs, u"--cacert"_qs, runDir + u"/tls.crt"_qs, coordinator.url() + u"/v1/status"_qs},
                   ProcessOptions{QProcessEnvironment::systemEnvironment(), false, 10'000});
    return QJsonDocument::fromJson(r.out).object();
}

QList<int> TestNodeReassign::shardStages(const QString& dataDir) {
    QList<int> stages;
    const QDir shards(dataDir + u"/shards"_qs);
    for (const QString& name : shards.entryList({u"*.manifest.json"_qs}, QDir::Files)) {
        // Only a shard that is complete counts; its manifest names the file.
        const QJsonObject manifest = QJsonDocument::fromJson(readFile(shards.filePath(name))).object();
        if (QFile::exists(shards.filePath(manifest.value(u"file").toString())))
            stages << manifest.value(u"stage").toInt(-1);
    }
    // Anything else of a shard's (a partial download, a file without its manifest) is left over.
    for (const QString& name : shards.entryList({u"*.safetensors"_qs, u"*.part"_qs}, QDir::Files))
        if (!QFile::exists(shards.filePath(name + u".manifest.json"_qs)))
            stages << -1;
    return stages;
}

void TestNodeReassign::starvedStageTakesANodeThatSwitchesAndKeepsIt() {
    const QString run = m_dir.filePath(u"run"_qs);
    CoordinatorProcess coordinator({u"--data-dir"_qs, run, u"--listen"_qs, u"127.0.0.1:0"_qs, u"--model"_qs,
                                    u"tiny"_qs, u"--stages"_qs, u"2"_qs, u"--heartbeat-timeout-ms"_qs,
                                    u"3000"_qs});
    QVERIFY2(coordinator.waitReady(), coordinator.err().constData());
    const QString ca = run + u"/tls.crt"_qs;

    // Three nodes, one after the other (each is admitted to the stage that needs it most): two
    // on one stage, one on the other.
    std::vector<std::unique_ptr<NodeProcess>> nodes;
    QStringList dirs;
    QList<int> stages;
    for (int i = 0; i < 3; ++i) {
        dirs << m_dir.filePath(u"node%1"_qs.arg(i));
        nodes.push_back(std::make_unique<NodeProcess>(coordinator.url(), dirs[i], ca));
        QVERIFY(waitWorking(dirs[i], 90'000, *nodes[i]));
        stages << status(dirs[i]).value(u"stage").toInt(-1);
    }
    QVERIFY2(stages.count(0) + stages.count(1) == 3 && (stages.count(0) == 1 || stages.count(1) == 1),
             qPrintable(u"stages %1 %2 %3"_qs.arg(stages[0]).arg(stages[1]).arg(stages[2])));
    const int starved = stages.count(0) == 1 ? 0 : 1;
    const int full = 1 - starved;
    const int lone = int(stages.indexOf(starved));

    // The lone node of its stage vanishes: within the coordinator's rebalancing delay, one of
    // the other two is moved there and works on it.
    nodes[lone]->kill();
    int moved = -1;
    const bool switched = QTest::qWaitFor(
        [&] {
            for (int i = 0; i < 3; ++i) {
                if (i == lone)
                    continue;
                const QJsonObject s = status(dirs[i]);
                if (s.value(u"stage").toInt(-1) == starved && s.value(u"state").toString() == u"Working")
                    moved = i;
            }
            return moved >= 0;
        },
        90'000);
    if (!switched)
        for (int i = 0; i < 3; ++i)
            if (i != lone)
                qWarning("node %d log:\n%s", i, nodes[i]->log().right(3000).constData());
    QVERIFY2(switched, coordinator.err().right(3000).constData());
    const int stayed = 3 - lone - moved;
    QCOMPARE(status(dirs[stayed]).value(u"stage").toInt(-1), full);

    const QByteArray log = nodes[moved]->log();
    const QByteArray line = QStringLiteral("the coordinator moves this node from stage %1 to stage %2")
                                .arg(full)
                                .arg(starved)
                                .toUtf8();
    QVERIFY2(log.contains(line), log.constData());
    // The session stayed open throughout (no reconnect, no new admission).
    const QByteArray after = log.mid(log.indexOf(line));
    QVERIFY2(!after.contains("session open") && !after.contains("admitted as"), after.constData());
    QVERIFY2(after.contains(u"stage %1 loaded"_qs.arg(starved).toUtf8()), after.constData());
    // Only the new stage's shard is kept.
    QVERIFY(QTest::qWaitFor([&] { return shardStages(dirs[moved]) == QList<int>{starved}; }, 10'000));

    // The coordinator routes both stages again.
    const auto bothStagesServed = [&] {
        const QJsonArray rows = coordinatorStatus(coordinator, run).value(u"stages").toArray();
        int served = 0;
        for (const QJsonValue& row : rows)
            if (row.toObject().value(u"nodes_online").toInt() >= 1)
                ++served;
        return rows.size() == 2 && served == 2;
    };
    QVERIFY2(QTest::qWaitFor(bothStagesServed, 15'000),
             QJsonDocument(coordinatorStatus(coordinator, run)).toJson().constData());

    // Killed and started again, it resumes its session on the new stage: no admission, no
    // download.
    nodes[moved]->kill();
    nodes[moved] = std::make_unique<NodeProcess>(coordinator.url(), dirs[moved], ca);
    QVERIFY(waitWorking(dirs[moved], 90'000, *nodes[moved]));
    QCOMPARE(status(dirs[moved]).value(u"stage").toInt(-1), starved);
    const QByteArray restarted = nodes[moved]->log();
    QVERIFY2(
        restarted.contains(u"resuming the session from an earlier run (stage %1)"_qs.arg(starved).toUtf8()),
        restarted.constData());
    QVERIFY2(!restarted.contains("admitted as"), restarted.constData());
    QVERIFY2(restarted.contains("is already here"), restarted.constData());
    QVERIFY2(!restarted.contains("not assigned to it"), restarted.constData());
    QVERIFY2(QTest::qWaitFor(bothStagesServed, 15'000),
             QJsonDocument(coordinatorStatus(coordinator, run)).toJson().constData());
}

QTEST_GUILESS_MAIN(TestNodeReassign)
#include "test_node_reassign.moc"
