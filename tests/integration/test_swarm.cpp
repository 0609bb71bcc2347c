// SPDX-License-Identifier: Apache-2.0
// The swarm end to end (issue 6): the real tessera-coordinator and eight real tessera-node
// processes on loopback train the tiny model with the subspace codec over 4 stages while a chaos
// driver SIGKILLs a random node every few seconds and starts a fresh one (a new identity: a join),
// and SIGKILLs the coordinator once and restarts it on the same port. Then everything stops
// cleanly and the test checks what a user of the swarm relies on: the model learned; every
// microbatch completed or was abandoned and counted; the FLOPs of the accepted work equal exactly
// the credit granted plus what is still in escrow, and no honest node forfeited any; every node's
// ledger verifies; every stage published a checkpoint.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "SwarmDatabase.h"
#include "SwarmNode.h"
#include "SwarmStatus.h"
#include "TestSupport.h"
#include "common/Identity.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <memory>
#include <vector>

using namespace tessera;
using namespace tessera::test;

namespace {

constexpr int kStages = 4;
constexpr int kNodes = 8;
constexpr int kMinJoins = 10;
constexpr int kMinLeaves = 8;
constexpr int kChaosCycles = 12;         // each kills one node and starts a fresh one
constexpr int kMaxChaosCycles = 20;      // more only while the coordinator has not seen enough churn
constexpr int kCoordinatorKillCycle = 6; // the coordinator is killed once, mid-chaos
constexpr int kCycleMs = 4000;
// The loss starts at ln(256) ≈ 5.55 (bytes, uniform). The synthetic corpus uses 32 symbols, so
// learning which bytes occur gives ln(32) ≈ 3.47 — the plateau of steps 30–80 — and its floor is
// 1.18 nats (4 successors per order-2 context). Below 3.0 the swarm has learned the sequence
// structure, not just the alphabet. Measured on 2 shared cores, about a step a second: the plateau
// ends between steps 80 and 120 depending on the churn; then 2.32 and 2.71 at step 150 (two runs),
// 1.91 at step 170, 1.64 at step 199.
constexpr qint64 kTargetStep = 170;
constexpr double kLossThreshold = 3.0;
constexpr qint64 kFlopPerMicroCredit = 1'000'000'000;

} // namespace

class TestSwarm final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void swarmLearnsThroughChurn();
    void cleanup();

private:
    bool startCoordinator(int port);
    bool restartCoordinator();
    void keepCoordinatorLog();
    void startNode();
    bool killRandomNode();
    bool freezeNodesWithWorkInFlight();
    QString exitedByItself();
    QJsonObject status();
    static bool everyStageServed(const QJsonObject& status);
    bool waitEveryStageServed(int ms);
    void checkDatabase();
    void checkLedgers();

    QTemporaryDir m_dir;
    QString m_runDir;
    QStringList m_coordinatorArguments;
    std::unique_ptr<CoordinatorProcess> m_coordinator;
    int m_coordinatorLives = 0;
    QString m_url;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
    std::vector<std::unique_ptr<SwarmNode>> m_nodes; // live
    QStringList m_dataDirs;                          // every data dir ever used
    CreditAccount m_credits;                         // as the stopped coordinator's database holds it
    QRandomGenerator m_random;
    int m_joins = 0;  // fresh nodes started by the driver (after the first eight)
    int m_leaves = 0; // nodes the driver SIGKILLed
    bool m_stopping = false;
};

void TestSwarm::initTestCase() {
    QVERIFY(m_dir.isValid());
    // The coordinator too: it writes checkpoints through the model code.
    qputenv("OMP_NUM_THREADS", "1");
    const quint32 seed = qEnvironmentVariableIsSet("TESSERA_SWARM_SEED")
                             ? quint32(qEnvironmentVariableIntValue("TESSERA_SWARM_SEED"))
                             : QRandomGenerator::global()->generate();
    m_random.seed(seed);
    qInfo("swarm: chaos seed %u (TESSERA_SWARM_SEED=%u repeats the choice of victims); files in %s", seed,
          seed, qPrintable(m_dir.path()));

    m_runDir = m_dir.filePath(u"coordinator"_qs);
    m_coordinatorArguments = {
        u"--data-dir"_qs, m_runDir, u"--model"_qs, u"tiny"_qs, u"--codec"_qs, u"subspace"_qs, u"--stages"_qs,
        QString::number(kStages), u"--heartbeat-timeout-ms"_qs, u"3000"_qs, u"--credit-interval-ms"_qs,
        u"1000"_qs,
        // Credit leaves escrow as soon as an audit of the node covers it.
        u"--credit-escrow-ms"_qs, u"0"_qs, u"--checkpoint-every"_qs, u"10"_qs, u"--averaging-interval"_qs,
        u"5"_qs, u"--averaging-partitions"_qs, u"4"_qs, u"--task-timeout-ms"_qs, u"5000"_qs,
        u"--microbatch-timeout-ms"_qs, u"30000"_qs};
}

void TestSwarm::cleanup() {
    if (!QTest::currentTestFailed())
        return;
    m_dir.setAutoRemove(false);
    if (m_coordinator) {
        m_coordinator->terminate(30'000);
        keepCoordinatorLog();
        // The trust layer's verdicts against nodes first: the tail is often a run of routine audit notes.
        QByteArrayList verdicts;
        for (const QByteArray& line : m_coordinator->err().split('\n'))
            if (line.contains("forfeits") || line.contains("struck") || line.contains("banned"))
                verdicts << line;
        qWarning("coordinator's verdicts against nodes (%lld):\n%s", qlonglong(verdicts.size()),
                 verdicts.mid(std::max<qsizetype>(0, verdicts.size() - 30)).join('\n').constData());
        qWarning("coordinator log (tail):\n%s", m_coordinator->err().right(6000).constData());
    }
    for (const auto& node : m_nodes)
        if (!node->running() && !m_stopping)
            qWarning("node %s (exited) log (tail):\n%s", qPrintable(node->dataDir()),
                     node->logTail().constData());
    qWarning("the swarm's files stay in %s (coordinator-N.log, node-N.log, node-N/)",
             qPrintable(m_dir.path()));
}

bool TestSwarm::startCoordinator(int port) {
    QStringList arguments = m_coordinatorArguments;
    arguments << u"--listen"_qs << u"127.0.0.1:"_qs + QString::number(port);
    m_coordinator = std::make_unique<CoordinatorProcess>(arguments);
    ++m_coordinatorLives;
    if (!m_coordinator->waitReady()) {
        qWarning("the coordinator did not start:\n%s", m_coordinator->err().right(4000).constData());
        return false;
    }
    m_url = m_coordinator->url();
    const QList<QSslCertificate> ca = QSslCertificate::fromPath(m_runDir + u"/tls.crt"_qs, QSsl::Pem);
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(ca);
    return !ca.isEmpty();
}

void TestSwarm::keepCoordinatorLog() {
    writeFile(m_dir.filePath(u"coordinator-%1.log"_qs.arg(m_coordinatorLives)), m_coordinator->err());
}

// SIGKILL, then the same data dir and port: the nodes reconnect on their own.
bool TestSwarm::restartCoordinator() {
    const int port = QUrl(m_url).port();
    m_coordinator->kill();
    keepCoordinatorLog();
    QTest::qWait(1000);
    return startCoordinator(port);
}

void TestSwarm::startNode() {
    const int n = int(m_dataDirs.size()) + 1;
    const QString dataDir = m_dir.filePath(u"node-%1"_qs.arg(n));
    m_dataDirs << dataDir;
    m_nodes.push_back(std::make_unique<SwarmNode>(m_url, dataDir, m_runDir + u"/tls.crt"_qs,
                                                  m_dir.filePath(u"node-%1.log"_qs.arg(n))));
}

bool TestSwarm::killRandomNode() {
    if (m_nodes.empty())
        return false;
    const auto victim = m_nodes.begin() + m_random.bounded(int(m_nodes.size()));
    qInfo("swarm chaos: SIGKILL %s (up %.1f s)", qPrintable(QDir((*victim)->dataDir()).dirName()),
          double((*victim)->ageMs()) / 1000.0);
    (*victim)->kill();
    m_nodes.erase(victim);
    ++m_leaves;
    return true;
}

// Every node hung (SIGSTOP) once some work is in flight; true when that work is still in flight 1.5 s later.
bool TestSwarm::freezeNodesWithWorkInFlight() {
    for (const auto& node : m_nodes)
        node->freeze(false);
    const auto inFlight = [&] {
        return integer(status().value(u"microbatches").toObject(), u"in_flight") > 0;
    };
    if (!QTest::qWaitFor(inFlight, 10'000))
        return false;
    for (const auto& node : m_nodes)
        node->freeze(true);
    const QJsonObject before = status().value(u"microbatches").toObject();
    QTest::qWait(1500);
    const QJsonObject after = status().value(u"microbatches").toObject();
    return integer(after, u"completed") + integer(after, u"abandoned") < integer(before, u"issued");
}

// A node that exited although nobody stopped it: its data dir and log tail, else empty.
QString TestSwarm::exitedByItself() {
    for (const auto& node : m_nodes)
        if (!node->running())
            return node->dataDir() + u" exited by itself; its log ends:\n"_qs +
                   QString::fromUtf8(node->logTail());
    return {};
}

QJsonObject TestSwarm::status() {
    const HttpReply r = httpRequest(m_net, m_ssl, m_url + u"/v1/status"_qs, "GET", QByteArray(), 10'000);
    return r.status == 200 ? r.json() : QJsonObject();
}

bool TestSwarm::everyStageServed(const QJsonObject& status) {
    const QJsonArray stages = status.value(u"stages").toArray();
    if (stages.size() != kStages)
        return false;
    for (const QJsonValue& s : stages)
        if (s.toObject().value(u"nodes").toInt() < 1)
            return false;
    return true;
}

bool TestSwarm::waitEveryStageServed(int ms) {
    QJsonObject last;
    const bool served = QTest::qWaitFor(
        [&] {
            last = status();
            return everyStageServed(last);
        },
        ms);
    if (!served)
        qWarning("not every stage has a node after %d ms: %s", ms, qPrintable(describeSwarm(last)));
    return served;
}

void TestSwarm::swarmLearnsThroughChurn() {
    QElapsedTimer clock;
    clock.start();
    QVERIFY(startCoordinator(0));
    const QJsonObject model =
        httpRequest(m_net, m_ssl, m_url + u"/v1/info"_qs).json().value(u"model").toObject();
    QCOMPARE(model.value(u"codec").toString(), u"subspace"_qs);
    QCOMPARE(model.value(u"stages").toInt(), kStages);
    for (int i = 0; i < kNodes; ++i)
        startNode();
    QVERIFY2(waitEveryStageServed(90'000), qPrintable(exitedByItself()));
    qInfo("swarm: every stage served after %.1f s: %s", double(clock.elapsed()) / 1000.0,
          qPrintable(describeSwarm(status())));

    // Chaos: a random node SIGKILLed and a fresh one started every few seconds; the coordinator
    // SIGKILLed and restarted once. It goes on past kChaosCycles only while the coordinator has
    // not yet counted the churn the test requires (a victim that had not joined is no leave).
    QJsonObject s;
    for (int cycle = 1;; ++cycle) {
        QVERIFY(killRandomNode());
        startNode();
        ++m_joins;
        if (cycle == kCoordinatorKillCycle) {
            // A SIGKILL loses the last second's unflushed writes: the nodes hang (SIGSTOP) while work
            // is in flight, so that work is over a second old when the coordinator dies.
            QVERIFY2(QTest::qWaitFor([&] { return freezeNodesWithWorkInFlight(); }, 60'000),
                     "no work stayed in flight while the nodes hung");
            qInfo("swarm chaos: SIGKILL the coordinator at %s", qPrintable(describeSwarm(status())));
            QElapsedTimer down;
            down.start();
            QVERIFY(restartCoordinator());
            for (const auto& node : m_nodes)
                node->freeze(false);
            QVERIFY2(waitEveryStageServed(60'000), qPrintable(exitedByItself()));
            // What the killed process had in flight is counted abandoned by its successor.
            const qint64 abandoned = integer(status().value(u"microbatches").toObject(), u"abandoned");
            qInfo("swarm: coordinator restarted; every stage served again after %.1f s; %lld microbatches "
                  "abandoned",
                  double(down.elapsed()) / 1000.0, abandoned);
            QVERIFY2(abandoned > 0,
                     "the coordinator was SIGKILLed with work in flight, yet after its restart "
                     "no microbatch is counted abandoned");
        }
        QTest::qWait(kCycleMs);
        const QString gone = exitedByItself();
        QVERIFY2(gone.isEmpty(), qPrintable(gone));
        s = status();
        qInfo("swarm chaos: cycle %d at %.1f s: %s", cycle, double(clock.elapsed()) / 1000.0,
              qPrintable(describeSwarm(s)));
        const bool enough = integer(s, u"joins") >= kMinJoins && integer(s, u"leaves") >= kMinLeaves;
        if (cycle >= kMaxChaosCycles || (cycle >= kChaosCycles && enough))
            break;
    }
    const double chaosEnd = double(clock.elapsed()) / 1000.0;

    // Training goes on without chaos until the target step.
    const bool reached = QTest::qWaitFor(
        [&] {
            const QJsonObject now = status();
            if (!now.isEmpty())
                s = now;
            return integer(s, u"step") >= kTargetStep;
        },
        480'000); // no speed is asserted: a loaded CI machine once needed more than 240 s
    QVERIFY2(reached, qPrintable(u"step %1 not reached: "_qs.arg(kTargetStep) + describeSwarm(s)));
    const double trainedFor = double(clock.elapsed()) / 1000.0;
    const double loss = s.value(u"loss").toDouble(-1);
    const QJsonObject mb = s.value(u"microbatches").toObject();
    qInfo("swarm: final status: %s", qPrintable(describeSwarm(s)));
    qInfo("swarm: steps %lld, tokens %lld, loss %.4f (threshold %.2f), tokens/s %.0f (last 30 s)",
          integer(s, u"step"), integer(s, u"tokens"), loss, kLossThreshold,
          s.value(u"tokens_per_second").toDouble());
    qInfo("swarm: joins %lld, leaves %lld (coordinator); driver: %d nodes started after the first %d, "
          "%d SIGKILLed, the coordinator SIGKILLed once",
          integer(s, u"joins"), integer(s, u"leaves"), m_joins, kNodes, m_leaves);
    qInfo("swarm: microbatches issued %lld, completed %lld, abandoned %lld, retries %lld, duplicates %lld",
          integer(mb, u"issued"), integer(mb, u"completed"), integer(mb, u"abandoned"),
          integer(mb, u"retries"), integer(mb, u"duplicates"));
    qInfo("swarm: duration: chaos ended at %.1f s, step %lld reached at %.1f s", chaosEnd, kTargetStep,
          trainedFor);

    QStringList curve;
    for (const QJsonValue& p : s.value(u"loss_curve").toArray())
        if (const QJsonArray point = p.toArray(); point.at(0).toInteger() % 10 == 0)
            curve << u"%1:%2"_qs.arg(point.at(0).toInteger()).arg(point.at(1).toDouble(), 0, 'f', 3);
    qInfo("swarm: loss curve (step:loss): %s", qPrintable(curve.join(u' ')));

    // A clean stop: every node through its control socket, then SIGTERM to the coordinator.
    m_stopping = true;
    QStringList unclean;
    for (const auto& node : m_nodes)
        if (const int code = node->stop(20'000); code != 0)
            unclean << u"%1 (exit %2): %3"_qs.arg(node->dataDir())
                           .arg(code)
                           .arg(QString::fromUtf8(node->logTail(1500)));
    const int coordinatorExit = m_coordinator->terminate(30'000);
    keepCoordinatorLog();
    qInfo("swarm: total duration %.1f s", double(clock.elapsed()) / 1000.0);
    QVERIFY2(unclean.isEmpty(), qPrintable(u"nodes that did not stop cleanly: "_qs + unclean.join(u"\n"_qs)));
    QVERIFY2(coordinatorExit == 0,
             qPrintable(u"the coordinator's clean stop exited %1; its log ends:\n"_qs.arg(coordinatorExit) +
                        QString::fromUtf8(m_coordinator->err().right(4000))));

    QVERIFY2(m_joins >= kMinJoins && m_leaves >= kMinLeaves,
             qPrintable(u"the driver made %1 joins and %2 leaves"_qs.arg(m_joins).arg(m_leaves)));
    QVERIFY2(integer(s, u"joins") >= kMinJoins,
             qPrintable(
                 u"the coordinator counted %1 joins, want ≥ %2"_qs.arg(integer(s, u"joins")).arg(kMinJoins)));
    QVERIFY2(
        integer(s, u"leaves") >= kMinLeaves,
        qPrintable(
            u"the coordinator counted %1 leaves, want ≥ %2"_qs.arg(integer(s, u"leaves")).arg(kMinLeaves)));

    checkDatabase();
    if (QTest::currentTestFailed())
        return;
    checkLedgers();
    if (QTest::currentTestFailed())
        return;
    QVERIFY2(loss > 0 && loss < kLossThreshold,
             qPrintable(u"the swarm did not learn: the loss of step %1 is %2, not below %3"_qs
                            .arg(integer(s, u"step"))
                            .arg(loss)
                            .arg(kLossThreshold)));
}

// Every microbatch accounted for, credit exactly the accepted FLOPs, checkpoints published.
void TestSwarm::checkDatabase() {
    SwarmDatabase db(m_runDir + u"/coordinator.sqlite"_qs);
    QVERIFY2(db.isOpen(), qPrintable(db.error()));

    MicrobatchAccount mb;
    QVERIFY2(db.microbatches(mb), qPrintable(db.error()));
    qInfo("swarm: database: microbatches issued %lld = completed %lld + abandoned %lld (+ in flight %lld)",
          mb.issued, mb.completed, mb.abandoned, mb.inFlight);
    for (auto it = mb.abandonReasons.cbegin(); it != mb.abandonReasons.cend(); ++it)
        qInfo("swarm: abandoned %lld: %s", it.value(), qPrintable(it.key()));
    QVERIFY2(mb.inFlight == 0,
             qPrintable(u"%1 microbatches are still in flight after a clean stop"_qs.arg(mb.inFlight)));
    QVERIFY2(mb.otherState == 0, qPrintable(u"%1 microbatches in an unknown state"_qs.arg(mb.otherState)));
    QVERIFY2(mb.completed + mb.abandoned == mb.issued,
             qPrintable(u"microbatches lost: issued %1, completed %2, abandoned %3"_qs.arg(mb.issued)
                            .arg(mb.completed)
                            .arg(mb.abandoned)));
    QVERIFY2(mb.completed > 0, "no microbatch completed");
    QVERIFY2(mb.abandoned > 0,
             "the coordinator was SIGKILLed with work in flight, yet nothing was abandoned");
    QVERIFY2(mb.abandonedWithoutReason == 0,
             qPrintable(u"%1 abandoned microbatches say not why"_qs.arg(mb.abandonedWithoutReason)));

    CreditAccount c;
    QVERIFY2(db.credits(c), qPrintable(db.error()));
    qInfo("swarm: credits: %lld accepted tasks, %lld FLOP accepted = %lld FLOP in %lld receipts + %lld "
          "pending, "
          "%lld nodes",
          c.acceptedTasks, c.acceptedFlop, c.receiptFlop, c.receipts, c.pendingFlop, qint64(c.nodes.size()));
    QVERIFY2(c.acceptedFlop > 0, "no task was accepted");
    QVERIFY2(c.acceptedFlop == c.receiptFlop + c.pendingFlop + c.forfeitedFlop,
             qPrintable(u"credit drifted: accepted %1 FLOP, receipts %2 + pending %3 + forfeited %4"_qs
                            .arg(c.acceptedFlop)
                            .arg(c.receiptFlop)
                            .arg(c.pendingFlop)
                            .arg(c.forfeitedFlop)));
    // Every node is honest: none lost credit to the checks, whatever the chaos did to them; and
    // credit was paid (work after a node's last passed audit stays pending: escrow).
    QVERIFY2(c.forfeitedFlop == 0, qPrintable(u"honest nodes forfeited %1 FLOP:\n%2"_qs.arg(c.forfeitedFlop)
                                                  .arg(c.forfeitReasons.join(u'\n'))));
    QVERIFY2(c.receiptFlop > 0, "no credit was granted");
    for (auto it = c.nodes.cbegin(); it != c.nodes.cend(); ++it) {
        const NodeCredit& n = it.value();
        const QString who = it.key().left(12);
        QVERIFY2(n.acceptedFlop == n.receiptFlop + n.pendingFlop + n.forfeitedFlop,
                 qPrintable(u"node %1: accepted %2 FLOP, receipts %3 + pending %4 + forfeited %5"_qs.arg(who)
                                .arg(n.acceptedFlop)
                                .arg(n.receiptFlop)
                                .arg(n.pendingFlop)
                                .arg(n.forfeitedFlop)));
        QVERIFY2(n.microCredits == n.receiptFlop / kFlopPerMicroCredit,
                 qPrintable(u"node %1: %2 micro-credits for %3 FLOP, want floor(FLOP / 10^9) = %4"_qs.arg(who)
                                .arg(n.microCredits)
                                .arg(n.receiptFlop)
                                .arg(n.receiptFlop / kFlopPerMicroCredit)));
        QVERIFY2(n.receipts == 0 || (n.firstSeq == 1 && n.lastSeq == n.receipts),
                 qPrintable(u"node %1: receipts numbered %2..%3, %4 of them"_qs.arg(who)
                                .arg(n.firstSeq)
                                .arg(n.lastSeq)
                                .arg(n.receipts)));
    }
    m_credits = c;

    // Published every 10 steps while training, and once more by the clean stop.
    QMap<int, StageCheckpoints> checkpoints;
    QVERIFY2(db.checkpoints(kStages, checkpoints), qPrintable(db.error()));
    QStringList published;
    for (auto it = checkpoints.cbegin(); it != checkpoints.cend(); ++it)
        published << u"stage %1: %2 (latest step %3)"_qs.arg(it.key()).arg(it->published).arg(it->latestStep);
    qInfo("swarm: checkpoints published: %s", qPrintable(published.join(u", "_qs)));
    for (auto it = checkpoints.cbegin(); it != checkpoints.cend(); ++it)
        QVERIFY2(it->latestStep > 0 && it->published >= 2,
                 qPrintable(u"stage %1 published %2 checkpoints from training, want ≥ 2"_qs.arg(it.key()).arg(
                     it->published)));

    qint64 step = 0, tokens = 0, joins = 0, leaves = 0;
    QVERIFY2(db.trainingState(step, tokens, joins, leaves), qPrintable(db.error()));
    qInfo("swarm: persisted training state: step %lld, tokens %lld, joins %lld, leaves %lld", step, tokens,
          joins, leaves);
}

// Every data dir ever used, killed or stopped: its ledger verifies offline and holds no more
// than the coordinator granted. A node killed before it joined has no ledger and no credit.
void TestSwarm::checkLedgers() {
    int verified = 0, withoutLedger = 0;
    qint64 receipts = 0;
    static const QRegularExpression okLine(u"^ledger ok: (\\d+) receipts"_qs);
    for (const QString& dir : m_dataDirs) {
        const ProcessRun r =
            runProcess(nodeProgram(), {u"ledger"_qs, u"verify"_qs, u"--data-dir"_qs, dir},
                       ProcessOptions{QProcessEnvironment::systemEnvironment(), false, 30'000});
        QString nodeId;
        if (Result<Identity> id = Identity::load(dir + u"/node.key"_qs); id)
            nodeId = id->nodeId();
        const NodeCredit granted = m_credits.nodes.value(nodeId);
        if (!QFile::exists(dir + u"/ledger.sqlite"_qs)) {
            // Killed before Joining: nothing to verify, and nothing may have been granted to it.
            QVERIFY2(r.exitCode != 0 && r.err.contains("no ledger"), r.err.constData());
            QVERIFY2(
                granted.receipts == 0 && granted.acceptedFlop == 0,
                qPrintable(u"%1 has no ledger but the coordinator granted it %2 receipts"_qs.arg(dir).arg(
                    granted.receipts)));
            ++withoutLedger;
            continue;
        }
        QVERIFY2(r.exitCode == 0,
                 qPrintable(u"tessera-node ledger verify --data-dir %1: exit %2: %3"_qs.arg(dir)
                                .arg(r.exitCode)
                                .arg(QString::fromUtf8(r.err + r.out))));
        const QRegularExpressionMatch m = okLine.match(QString::fromUtf8(r.out));
        QVERIFY2(m.hasMatch(), r.out.constData());
        const qint64 held = m.captured(1).toLongLong();
        QVERIFY2(held <= granted.receipts,
                 qPrintable(u"%1 holds %2 receipts, the coordinator granted %3"_qs.arg(dir).arg(held).arg(
                     granted.receipts)));
        receipts += held;
        ++verified;
    }
    qInfo("swarm: ledgers: %d of %lld data dirs verified (%lld receipts held), %d never reached Joining (no "
          "ledger)",
          verified, qint64(m_dataDirs.size()), receipts, withoutLedger);
}

QTEST_GUILESS_MAIN(TestSwarm)
#include "test_swarm.moc"
