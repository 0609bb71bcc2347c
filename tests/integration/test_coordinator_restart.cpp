// SPDX-License-Identifier: Apache-2.0
// A coordinator restart loses no training (issue 17): a real tessera-coordinator and four real nodes
// (two stages, two replicas each) train the tiny model; the coordinator is stopped cleanly (SIGTERM)
// at step 60 and restarted on the same data dir and port, then SIGKILLed at step 90 — 30 steps after
// its last published checkpoint — and restarted again. The nodes reconnect on their own, and each
// stage's current weights are taken back from them, checked (Reclaim), instead of the checkpoint:
// the coordinator says so for both stages and publishes them at once. What a user would notice: the
// loss after each restart goes on from where it was (the mean of the 5 steps after within 5% of the
// 5 steps before; a restart that reseeded the synthetic corpus once sent it from 2.74 to 4.08, and one
// that reloaded an older checkpoint from ~3.2 towards the 3.47 plateau), the step count goes on, both
// replicas of each stage are back at work, and the run keeps learning. Last, the newest checkpoint of
// stage 1 is damaged on disk while the coordinator is stopped: the next start refuses it in words,
// uses the version before it, and training goes on.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "SwarmNode.h"
#include "SwarmStatus.h"
#include "TestSupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QRegularExpression>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <algorithm>
#include <memory>
#include <vector>

using namespace tessera::test;

namespace {

constexpr qint64 kTermAtStep = 60, kKillAtStep = 90, kLastStep = 110;
constexpr int kReplicas = 2;
constexpr double kMostRise = 1.05;

// The mean loss of the last `count` steps before `step` (before: true), or of the first `count`
// steps at or after it, from /v1/status' loss_curve ([step, loss, tokens]); -1 when there are fewer.
double meanLoss(const QJsonObject& status, qint64 step, int count, bool before) {
    std::vector<double> losses;
    for (const QJsonValue& point : status.value(u"loss_curve").toArray())
        if (const qint64 s = point.toArray().at(0).toInteger(); before ? s < step : s >= step)
            losses.push_back(point.toArray().at(1).toDouble());
    if (int(losses.size()) < count)
        return -1;
    const auto first = before ? losses.end() - count : losses.begin();
    double sum = 0;
    for (auto it = first; it != first + count; ++it)
        sum += *it;
    return sum / count;
}

// A stage of /v1/status: its routed nodes, checkpoint version and step.
QJsonObject stageOf(const QJsonObject& status, int stage) {
    for (const QJsonValue& v : status.value(u"stages").toArray())
        if (v.toObject().value(u"stage").toInt() == stage)
            return v.toObject();
    return {};
}

} // namespace

class TestCoordinatorRestart final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aRestartLosesNoTraining() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        qputenv("OMP_NUM_THREADS", "1");
        const QString runDir = dir.filePath(u"coordinator"_qs);
        const auto arguments = [&](int port) {
            return QStringList{u"--data-dir"_qs, runDir,  u"--model"_qs,  u"tiny"_qs,
                               u"--stages"_qs,   u"2"_qs, u"--listen"_qs, u"127.0.0.1:%1"_qs.arg(port)};
        };
        auto coordinator = std::make_unique<CoordinatorProcess>(arguments(0));
        QVERIFY2(coordinator->waitReady(), coordinator->err().right(3000).constData());
        const QString url = coordinator->url();
        const int port = QUrl(url).port();
        QNetworkAccessManager net;
        QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
        ssl.setCaCertificates(QSslCertificate::fromPath(runDir + u"/tls.crt"_qs, QSsl::Pem));
        QJsonObject s;
        const auto reached = [&](qint64 step) {
            return QTest::qWaitFor(
                [&] {
                    const HttpReply r =
                        httpRequest(net, ssl, url + u"/v1/status"_qs, "GET", QByteArray(), 10'000);
                    if (r.status == 200)
                        s = r.json();
                    return r.status == 200 && integer(s, u"step") >= step;
                },
                300'000);
        };
        std::vector<std::unique_ptr<SwarmNode>> nodes;
        for (int i = 1; i <= 2 * kReplicas; ++i)
            nodes.push_back(std::make_unique<SwarmNode>(url, dir.filePath(u"node-%1"_qs.arg(i)),
                                                        runDir + u"/tls.crt"_qs,
                                                        dir.filePath(u"node-%1.log"_qs.arg(i))));

        double first = -1; // the loss before the first restart
        for (const bool clean : {true, false}) {
            const qint64 at = clean ? kTermAtStep : kKillAtStep;
            QVERIFY2(reached(at), qPrintable(describeSwarm(s)));
            const qint64 stopped = integer(s, u"step");
            const double before = meanLoss(s, stopped, 5, true);
            QVERIFY2(before > 0, qPrintable(describeSwarm(s)));
            if (first < 0)
                first = before;
            if (clean)
                QCOMPARE(coordinator->terminate(30'000), 0);
            else
                coordinator->kill();
            coordinator = std::make_unique<CoordinatorProcess>(arguments(port));
            QVERIFY2(coordinator->waitReady(), coordinator->err().right(3000).constData());
            QVERIFY(coordinator->out().contains("resumed the run"));
            // The nodes come back on their own; the steps go on from where they were (a SIGKILL may
            // lose the step in progress: its microbatches are counted abandoned and redone).
            QVERIFY2(reached(stopped + 8), qPrintable(describeSwarm(s)));
            const double after = meanLoss(s, stopped, 5, false);
            qInfo("restart (%s) at step %lld: mean loss %.4f over the 5 steps before, %.4f over the 5 after",
                  clean ? "SIGTERM" : "SIGKILL", qlonglong(stopped), before, after);
            QVERIFY2(after > 0 && after < before * kMostRise,
                     qPrintable(u"%1 restart at step %2: loss %3 before, %4 after (at most +5%)"_qs
                                    .arg(clean ? u"a clean"_qs : u"a SIGKILL"_qs)
                                    .arg(stopped)
                                    .arg(before)
                                    .arg(after)));
            for (const QByteArray& line : coordinator->err().split('\n'))
                if (line.startsWith("reclaim:") || line.contains("checkpoint"))
                    qInfo("%s", line.constData());
            // Each stage's weights were taken back from its replicas and published at the step the
            // run resumed from — not the checkpoint of up to 50 steps before. Replicas that agree give
            // their mean; two a step apart (the stop came between the two getting the step's result)
            // give the one nearer the checkpoint.
            for (int stage = 0; stage < 2; ++stage) {
                const QRegularExpression took(
                    u"reclaim: stage %1: (two replicas [0-9.e+-]+ apart: )?took"_qs.arg(stage));
                QVERIFY2(QString::fromUtf8(coordinator->err()).contains(took),
                         coordinator->err().right(3000).constData());
                QVERIFY2(integer(stageOf(s, stage), u"checkpoint_step") >= stopped - 2,
                         qPrintable(describeSwarm(s)));
            }
            // Both replicas of each stage are back at work.
            QVERIFY2(QTest::qWaitFor(
                         [&] {
                             (void)reached(0);
                             return integer(stageOf(s, 0), u"nodes") == kReplicas &&
                                    integer(stageOf(s, 1), u"nodes") == kReplicas;
                         },
                         120'000),
                     qPrintable(describeSwarm(s)));
        }
        // And it keeps learning.
        QVERIFY2(reached(kLastStep), qPrintable(describeSwarm(s)));
        const double last = meanLoss(s, kLastStep, 5, true);
        QVERIFY2(last > 0 && last < first,
                 qPrintable(u"loss %1 at the end, %2 before the first restart"_qs.arg(last).arg(first)));
        // The newest checkpoint of stage 1 damaged on disk while the coordinator is down (a disk
        // error): refused at the next start in words, the version before it used, training goes on.
        QCOMPARE(coordinator->terminate(30'000), 0);
        qint64 damaged = 0; // the newest version of stage 1 (the stop published one more)
        for (const QString& name : QDir(runDir + u"/shards"_qs).entryList({u"stage-1-v*.safetensors"_qs}))
            damaged = std::max(damaged, name.mid(9, name.size() - 9 - 12).toLongLong());
        QVERIFY(damaged > 1);
        QFile file(runDir + u"/shards/stage-1-v%1.safetensors"_qs.arg(damaged));
        QVERIFY2(file.open(QIODevice::ReadWrite), qPrintable(file.fileName()));
        QVERIFY(file.seek(file.size() / 2));
        QVERIFY(file.write(QByteArray(64, '\x5a')) == 64);
        file.close();
        coordinator = std::make_unique<CoordinatorProcess>(arguments(port));
        QVERIFY2(coordinator->waitReady(), coordinator->err().right(3000).constData());
        const QByteArray refusal = u"stage 1's checkpoint version %1"_qs.arg(damaged).toUtf8();
        QVERIFY2(coordinator->err().contains(refusal) && coordinator->err().contains("refused"),
                 coordinator->err().right(3000).constData());
        QVERIFY2(reached(kLastStep + 8), qPrintable(describeSwarm(s)));
        QVERIFY2(integer(stageOf(s, 1), u"checkpoint_version") > damaged, qPrintable(describeSwarm(s)));
        const double resumed = meanLoss(s, kLastStep + 8, 5, true);
        QVERIFY2(resumed > 0 && resumed < last * kMostRise,
                 qPrintable(u"loss %1 after the damaged checkpoint, %2 before"_qs.arg(resumed).arg(last)));
        for (auto& node : nodes)
            QCOMPARE(node->stop(20'000), 0);
        QCOMPARE(coordinator->terminate(30'000), 0);
    }
};

QTEST_GUILESS_MAIN(TestCoordinatorRestart)
#include "test_coordinator_restart.moc"
