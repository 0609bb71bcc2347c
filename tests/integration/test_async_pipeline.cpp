// SPDX-License-Identifier: Apache-2.0
// The asynchronous pipeline end to end (issue 16): a real tessera-coordinator with --pipeline async
// and four real nodes (two stages, two replicas each) on loopback train the tiny model while one
// node is SIGKILLed mid-run. What a user relies on: the run reaches its last step and learns; every
// microbatch is completed or counted abandoned; the gradient exchange counts the replicas' shares at
// every step; no node ever ran a backward on weights it no longer held (the coordinator's gating
// keeps every stash a microbatch needs); the coordinator reports the pipeline and the look-ahead asked.
// The exchange travels in 8 bits (--gradient-bits 8, the setting for a home link): the nodes' shares
// decode, their results apply, and the run still learns.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "SwarmNode.h"
#include "SwarmStatus.h"
#include "TestSupport.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <vector>

using namespace tessera::test;

namespace {

constexpr int kSteps = 40;
constexpr int kMicrobatchesPerStep = 8;
constexpr int kKillAtStep = 15;
// ln(256) ≈ 5.55 at the start; the synthetic corpus' 32 symbols give ln(32) ≈ 3.47, which the
// swarm reaches by step ~25 (bench_swarm: 3.47 at step 25, 3.30 at 50): a pipeline whose updates
// did not land would still be near 5.5.
constexpr double kLossThreshold = 3.8;

} // namespace

class TestAsyncPipeline final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trainsAndLosesNothingThroughAKill() {
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
                                        u"--pipeline"_qs,
                                        u"async"_qs,
                                        u"--look-ahead"_qs,
                                        u"1.5"_qs,
                                        u"--gradient-bits"_qs,
                                        u"8"_qs,
                                        u"--max-steps"_qs,
                                        QString::number(kSteps),
                                        u"--microbatches-per-step"_qs,
                                        QString::number(kMicrobatchesPerStep),
                                        u"--heartbeat-timeout-ms"_qs,
                                        u"3000"_qs,
                                        u"--task-timeout-ms"_qs,
                                        u"5000"_qs,
                                        u"--listen"_qs,
                                        u"127.0.0.1:0"_qs});
        QVERIFY2(coordinator.waitReady(), coordinator.err().right(3000).constData());
        QNetworkAccessManager net;
        QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
        ssl.setCaCertificates(QSslCertificate::fromPath(runDir + u"/tls.crt"_qs, QSsl::Pem));
        const auto status = [&] {
            const HttpReply r =
                httpRequest(net, ssl, coordinator.url() + u"/v1/status"_qs, "GET", QByteArray(), 10'000);
            return r.status == 200 ? r.json() : QJsonObject();
        };

        std::vector<std::unique_ptr<SwarmNode>> nodes;
        for (int i = 1; i <= 4; ++i)
            nodes.push_back(std::make_unique<SwarmNode>(coordinator.url(), dir.filePath(u"node-%1"_qs.arg(i)),
                                                        runDir + u"/tls.crt"_qs,
                                                        dir.filePath(u"node-%1.log"_qs.arg(i))));
        QJsonObject s;
        const auto reached = [&](qint64 step) {
            return QTest::qWaitFor(
                [&] {
                    s = status();
                    return integer(s, u"step") >= step;
                },
                240'000);
        };
        QVERIFY2(reached(kKillAtStep), qPrintable(describeSwarm(s)));
        QCOMPARE(integer(s, u"pipeline_depth"), 2);
        QCOMPARE(s.value(u"gradients").toObject().value(u"look_ahead").toDouble(), 1.5); // as asked
        QCOMPARE(integer(s.value(u"gradients").toObject(), u"bits"), 8);
        qInfo("async: before the kill: %s", qPrintable(describeSwarm(s)));
        nodes.back()->kill(); // mid-step, with work in flight: its phases go to the other replica

        QVERIFY2(reached(kSteps), qPrintable(describeSwarm(s)));
        // What was in flight when the last step ended finishes or is counted.
        QVERIFY(QTest::qWaitFor(
            [&] {
                s = status();
                return integer(s.value(u"microbatches").toObject(), u"in_flight") == 0;
            },
            60'000));
        qInfo("async: final: %s", qPrintable(describeSwarm(s)));
        const QJsonObject mb = s.value(u"microbatches").toObject();
        QCOMPARE(integer(mb, u"issued"), integer(mb, u"completed") + integer(mb, u"abandoned"));
        QVERIFY(integer(mb, u"completed") >= kSteps * kMicrobatchesPerStep);
        QCOMPARE(integer(s, u"step"), kSteps); // nothing is issued past --max-steps
        const double loss = s.value(u"loss").toDouble(-1);
        QVERIFY2(
            loss > 0 && loss < kLossThreshold,
            qPrintable(u"loss %1 at step %2 (threshold %3)"_qs.arg(loss).arg(kSteps).arg(kLossThreshold)));
        // Every step's exchange counted the replicas' shares (two per stage while both lived).
        const QJsonObject gradients = s.value(u"gradients").toObject();
        QVERIFY2(integer(gradients, u"shares_counted") >= kSteps * 2,
                 qPrintable(u"shares counted: %1"_qs.arg(integer(gradients, u"shares_counted"))));

        for (auto& node : nodes)
            if (node->running())
                QCOMPARE(node->stop(20'000), 0);
        for (int i = 1; i <= 4; ++i) {
            QFile log(dir.filePath(u"node-%1.log"_qs.arg(i)));
            QVERIFY(log.open(QIODevice::ReadOnly));
            const QByteArray text = log.readAll();
            QVERIFY2(!text.contains("no longer held") && !text.contains("has no recorded forward"),
                     qPrintable(u"node %1 ran out of a stashed weight version:\n"_qs.arg(i) +
                                QString::fromUtf8(text.right(2000))));
        }
        QCOMPARE(coordinator.terminate(30'000), 0);
    }
};

QTEST_MAIN(TestAsyncPipeline)
#include "test_async_pipeline.moc"
