// SPDX-License-Identifier: Apache-2.0
// PowerSGD's two rounds end to end (issue 16): a real tessera-coordinator with --gradient-rank 16
// and four real nodes (two stages, two replicas each) on loopback train the tiny model, and one node
// is SIGKILLed mid-run. What a user relies on: every step's exchange takes both rounds (the
// coordinator sends each stage's basis to the replicas whose first share counted, and counts their
// second shares), the run reaches its last step and learns, and a replica killed mid-exchange blocks
// no step (it is dropped from the round; the other replica of its stage carries on). Every share,
// basis and result travels in chunks of 1,000 values (--partition-chunk-values; 4 Mi by default,
// which an 8b middle stage's rank-16 share of ~26 MB exceeds), put together before they are read.
#include "CoordinatorProcess.h"
#include "SwarmNode.h"
#include "SwarmStatus.h"
#include "TestSupport.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <vector>

using namespace tessera::test;

namespace {

constexpr int kSteps = 40;
constexpr int kKillAtStep = 15;
// ln(256) ≈ 5.55 at the start, ln(32) ≈ 3.47 for the synthetic corpus' 32 symbols: an exchange
// whose updates did not land (or landed wrong) would still be near 5.5.
constexpr double kLossThreshold = 3.8;

} // namespace

class TestLowRankExchange final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void twoRoundsEveryStepThroughAKill() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        qputenv("OMP_NUM_THREADS", "1");
        const QString runDir = dir.filePath(u"coordinator"_qs);
        CoordinatorProcess coordinator({u"--data-dir"_qs,
                                        runDir,
                                        u"--model"_qs,
                                        u"tiny"_qs,
                                        u"--codec"_qs,
                                        u"subspace"_qs,
                                        u"--stages"_qs,
                                        u"2"_qs,
                                        u"--gradient-rank"_qs,
                                        u"16"_qs,
                                        u"--max-steps"_qs,
                                        QString::number(kSteps),
                                        u"--microbatches-per-step"_qs,
                                        u"8"_qs,
                                        u"--heartbeat-timeout-ms"_qs,
                                        u"3000"_qs,
                                        u"--task-timeout-ms"_qs,
                                        u"5000"_qs,
                                        u"--gradient-deadline-ms"_qs,
                                        u"5000"_qs,
                                        u"--partition-chunk-values"_qs,
                                        u"1000"_qs,
                                        u"--listen"_qs,
                                        u"127.0.0.1:0"_qs});
        QVERIFY2(coordinator.waitReady(), coordinator.err().right(3000).constData());
        StatusPoll poll(coordinator.url(), runDir + u"/tls.crt"_qs);
        std::vector<std::unique_ptr<SwarmNode>> nodes;
        for (int i = 1; i <= 4; ++i)
            nodes.push_back(std::make_unique<SwarmNode>(coordinator.url(), dir.filePath(u"node-%1"_qs.arg(i)),
                                                        runDir + u"/tls.crt"_qs,
                                                        dir.filePath(u"node-%1.log"_qs.arg(i))));
        const QJsonObject& s = poll.s;
        QVERIFY2(poll.reached(kKillAtStep, 240'000), qPrintable(describeSwarm(s)));
        QJsonObject gradients = s.value(u"gradients").toObject();
        QCOMPARE(integer(gradients, u"rank"), 16);
        QCOMPARE(integer(gradients, u"bits"), 32); // a low rank travels in fp32
        // Both rounds, per replica and step, are far fewer bytes than the fp32 gradient.
        for (const QJsonValue& stage : gradients.value(u"stages").toArray()) {
            const QJsonObject bytes = stage.toObject();
            QVERIFY(integer(bytes, u"share_bytes") * 2 < integer(bytes, u"fp32_gradient_bytes"));
        }
        const qint64 basesBefore = integer(gradients, u"bases_sent");
        qInfo("rank 16: before the kill: %s", qPrintable(describeSwarm(s)));
        nodes.back()->kill(); // mid-run, likely mid-exchange: its stage's other replica carries on

        QVERIFY2(poll.reached(kSteps, 240'000), qPrintable(describeSwarm(s)));
        // The last step's exchange closes after the step count reached it.
        QVERIFY2(poll.until(
                     [](const QJsonObject& o) {
                         return integer(o.value(u"gradients").toObject(), u"rounds") >= kSteps;
                     },
                     60'000),
                 qPrintable(u"rounds: %1"_qs.arg(integer(s.value(u"gradients").toObject(), u"rounds"))));
        qInfo("rank 16: final: %s", qPrintable(describeSwarm(s)));
        gradients = s.value(u"gradients").toObject();
        // Every step's exchange took both rounds: a basis to at least one replica of each of the two
        // stages, and at least one second share counted per stage.
        QVERIFY2(integer(gradients, u"bases_sent") >= 2 * kSteps,
                 qPrintable(u"bases sent: %1"_qs.arg(integer(gradients, u"bases_sent"))));
        QVERIFY(integer(gradients, u"bases_sent") - basesBefore >= 2 * (kSteps - kKillAtStep));
        QVERIFY2(integer(gradients, u"shares_counted") >= 2 * kSteps,
                 qPrintable(u"shares counted: %1"_qs.arg(integer(gradients, u"shares_counted"))));
        QVERIFY2(integer(gradients, u"share_chunks") >= 4 * kSteps, // the shares came in chunks
                 qPrintable(u"share chunks: %1"_qs.arg(integer(gradients, u"share_chunks"))));
        const double loss = s.value(u"loss").toDouble(-1);
        QVERIFY2(
            loss > 0 && loss < kLossThreshold,
            qPrintable(u"loss %1 at step %2 (threshold %3)"_qs.arg(loss).arg(kSteps).arg(kLossThreshold)));
        for (auto& node : nodes)
            if (node->running())
                QCOMPARE(node->stop(20'000), 0);
        QCOMPARE(coordinator.terminate(30'000), 0);
    }
};

QTEST_MAIN(TestLowRankExchange)
#include "test_low_rank_exchange.moc"
