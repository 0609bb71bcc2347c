// SPDX-License-Identifier: Apache-2.0
// EngineWorker: the real tiny model in two stages on two engine threads — a pipeline's forward
// gives a loss, backward and step train it, bad input is an error the worker survives, a soft
// pause stops compute and resumes without reloading, and the throttle roughly holds its limit.
#include "node/engine/EngineThread.h"
#include "node/engine/EngineWorker.h"

#include "base/TokenFrame.h"

#include "TinyFrames.h"

#include <QTest>

#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

using namespace tessera;
using namespace tessera::node;
using namespace tessera::test;

namespace {

// One stage on its own engine thread, recording what it says. Received through queued
// connections on the test's thread: QSignalSpy appends on the emitting thread, which would race.
struct Stage {
    EngineThread thread;
    EngineWorker* worker = thread.worker();
    QObject context;
    std::vector<EngineResult> finished;
    std::vector<bool> paused;
    std::vector<QString> loaded;
    std::int64_t nextTaskId = 1;

    Stage() {
        QObject::connect(worker, &EngineWorker::taskFinished, &context,
                         [this](const EngineResult& r) { finished.push_back(r); });
        QObject::connect(worker, &EngineWorker::pausedChanged, &context,
                         [this](bool p) { paused.push_back(p); });
        QObject::connect(worker, &EngineWorker::loaded, &context,
                         [this](const QString& error, qint64) { loaded.push_back(error); });
    }

    bool load(int stage) {
        EngineLoadOptions options;
        options.engine.config = tinyTwoStages();
        options.engine.stage = stage;
        // No warm-up: a few steps must visibly train.
        options.engine.optimizer.warmupSteps = 1;
        options.engine.optimizer.learningRate = 1e-2;
        const std::size_t before = loaded.size();
        worker->load(options);
        if (!QTest::qWaitFor([&] { return loaded.size() > before; }, 60'000))
            return false;
        if (!loaded.back().isEmpty())
            qWarning("load: %s", qPrintable(loaded.back()));
        return loaded.back().isEmpty();
    }

    EngineResult run(EngineTask task) {
        task.taskId = nextTaskId++;
        const std::size_t before = finished.size();
        worker->submit(task);
        if (!QTest::qWaitFor([&] { return finished.size() > before; }, 60'000))
            qFatal("task %lld never finished", static_cast<long long>(task.taskId));
        return finished.at(before);
    }

    bool waitPaused(std::size_t count) {
        return QTest::qWaitFor([&] { return paused.size() >= count; }, 10'000);
    }

    EngineResult forward(std::int64_t mb, const QByteArray& input, const QByteArray& targets = {}) {
        EngineTask t;
        t.kind = EngineTask::Forward;
        t.microbatch = mb;
        t.input = input;
        t.targets = targets;
        return run(t);
    }
    EngineResult backward(std::int64_t mb, const QByteArray& gradOutput) {
        EngineTask t;
        t.kind = EngineTask::Backward;
        t.microbatch = mb;
        t.gradOutput = gradOutput;
        return run(t);
    }
    EngineResult step(int microbatches) {
        EngineTask t;
        t.kind = EngineTask::Step;
        t.microbatches = microbatches;
        return run(t);
    }
    EngineResult forwardBackward(std::int64_t mb, const QByteArray& input, const QByteArray& targets) {
        EngineTask t;
        t.kind = EngineTask::ForwardBackward;
        t.microbatch = mb;
        t.input = input;
        t.targets = targets;
        return run(t);
    }
    EngineResult gather(int partition, int partitions) {
        EngineTask t;
        t.kind = EngineTask::Gather;
        t.partition = partition;
        t.partitions = partitions;
        return run(t);
    }
    EngineResult applyDelta(int partition, int partitions, std::vector<float> average,
                            std::vector<float> snapshot) {
        EngineTask t;
        t.kind = EngineTask::ApplyDelta;
        t.partition = partition;
        t.partitions = partitions;
        t.values = std::move(average);
        t.snapshot = std::move(snapshot);
        return run(t);
    }
    EngineResult setWeights(int partition, int partitions, std::vector<float> values) {
        EngineTask t;
        t.kind = EngineTask::SetWeights;
        t.partition = partition;
        t.partitions = partitions;
        t.values = std::move(values);
        return run(t);
    }
    void submitProbes(int count, int batch = kBatch, int seq = kSeq) {
        for (int i = 0; i < count; ++i) {
            EngineTask t;
            t.taskId = nextTaskId++;
            t.kind = EngineTask::Probe;
            t.batch = batch;
            t.seq = seq;
            t.seed = std::uint64_t(i);
            worker->submit(t);
        }
    }
};

} // namespace

class TestEngineWorker : public QObject {
    Q_OBJECT

private:
    // One training step of the two-stage pipeline on a fixed batch; returns the loss before it.
    static double trainStep(Stage& s0, Stage& s1, std::int64_t mb, const QByteArray& tokens,
                            const QByteArray& targets) {
        const EngineResult f0 = s0.forward(mb, tokens);
        const EngineResult f1 = s1.forward(mb, f0.output.toByteArray(), targets);
        const EngineResult b1 = s1.backward(mb, {});
        const EngineResult b0 = s0.backward(mb, b1.gradInput.toByteArray());
        const EngineResult st0 = s0.step(1);
        const EngineResult st1 = s1.step(1);
        for (const EngineResult* r : {&f0, &f1, &b1, &b0, &st0, &st1}) {
            if (!r->ok)
                qWarning("task %lld failed: %s", static_cast<long long>(r->taskId), qPrintable(r->error));
            if (!r->ok)
                return std::nan("");
        }
        return f1.loss;
    }

private Q_SLOTS:
    void pipelineForwardGivesAFiniteLoss() {
        Stage s0, s1;
        QVERIFY(s0.load(0));
        QVERIFY(s1.load(1));
        const EngineResult f0 = s0.forward(1, tokenFrame(0));
        QVERIFY2(f0.ok, qPrintable(f0.error));
        QVERIFY(!f0.output.isEmpty());
        QCOMPARE(f0.tokens, qint64(kBatch * kSeq));
        QVERIFY(f0.flop > 0);
        QVERIFY(f0.computeSeconds > 0);
        QVERIFY(f0.finishedNs >= f0.startedNs);

        const EngineResult f1 = s1.forward(1, f0.output.toByteArray(), tokenFrame(1));
        QVERIFY2(f1.ok, qPrintable(f1.error));
        QVERIFY(f1.output.isEmpty());
        QVERIFY(std::isfinite(f1.loss));
        // Untrained on a 256-byte vocabulary: about ln 256 ≈ 5.5.
        QVERIFY2(f1.loss > 3 && f1.loss < 8, qPrintable(QString::number(f1.loss)));
    }

    void backwardAndStepLowerTheLossOnARepeatedBatch() {
        Stage s0, s1;
        QVERIFY(s0.load(0));
        QVERIFY(s1.load(1));
        const QByteArray tokens = tokenFrame(0);
        const QByteArray targets = tokenFrame(1);
        std::vector<double> losses;
        for (int i = 0; i < 6; ++i) {
            losses.push_back(trainStep(s0, s1, i, tokens, targets));
            QVERIFY(std::isfinite(losses.back()));
        }
        const EngineResult b = s1.forward(99, s0.forward(99, tokens).output.toByteArray(), targets);
        QVERIFY(b.ok);
        QVERIFY2(b.loss < losses.front() - 0.1,
                 qPrintable(QStringLiteral("%1 → %2").arg(losses.front()).arg(b.loss)));
    }

    void malformedInputIsAnErrorAndTheWorkerKeepsServing() {
        Stage s0;
        QVERIFY(s0.load(0));
        const EngineResult bad = s0.forward(1, QByteArrayLiteral("not a token frame"));
        QVERIFY(!bad.ok);
        QVERIFY(!bad.error.isEmpty());
        QCOMPARE(bad.flop, qint64(0));
        const EngineResult unknown = s0.backward(12345, {}); // no forward ran, nothing relayed
        QVERIFY(!unknown.ok);
        QVERIFY(!unknown.error.isEmpty());
        const EngineResult good = s0.forward(2, tokenFrame(0));
        QVERIFY2(good.ok, qPrintable(good.error));
    }

    void forwardBackwardOnTheLastStageGivesLossAndGradient() {
        Stage s0, s1;
        QVERIFY(s0.load(0));
        QVERIFY(s1.load(1));
        const EngineResult f0 = s0.forward(3, tokenFrame(0));
        QVERIFY2(f0.ok, qPrintable(f0.error));
        const EngineResult fb = s1.forwardBackward(3, f0.output.toByteArray(), tokenFrame(1));
        QVERIFY2(fb.ok, qPrintable(fb.error));
        QVERIFY(std::isfinite(fb.loss));
        QVERIFY(fb.output.isEmpty());
        QVERIFY(!fb.gradInput.isEmpty());
        QCOMPARE(fb.tokens, qint64(kBatch * kSeq));
        // Credited as the forward and the backward it ran: 2·N·T + 4·N·T, three forwards' worth.
        const EngineResult f1 = s1.forward(30, f0.output.toByteArray(), tokenFrame(1));
        QVERIFY(f1.flop > 0);
        QCOMPARE(fb.flop, 3 * f1.flop);
        // Stage 0 takes the gradient through the graph its forward kept.
        const EngineResult b0 = s0.backward(3, fb.gradInput.toByteArray());
        QVERIFY2(b0.ok, qPrintable(b0.error));
        QVERIFY(b0.gradInput.isEmpty());
        // The graph was consumed: a second backward of microbatch 3 needs its input.
        QCOMPARE(s1.backward(3, {}).errorKind, ErrorKind::MissingGraph);
        // Only the last stage computes a loss.
        const EngineResult wrong = s0.forwardBackward(4, tokenFrame(0), tokenFrame(1));
        QVERIFY(!wrong.ok);
        QVERIFY2(wrong.error.contains(u"last stage"), qPrintable(wrong.error));
    }

    void backwardWithoutAGraphOrInputNeedsTheInput() {
        Stage s0, s1;
        QVERIFY(s0.load(0));
        QVERIFY(s1.load(1));
        const EngineResult f0 = s0.forward(5, tokenFrame(0));
        const EngineResult f1 = s1.forward(5, f0.output.toByteArray(), tokenFrame(1));
        QVERIFY(f1.ok);
        const EngineResult b1 = s1.backward(5, {});
        QVERIFY(b1.ok);
        // Stage 0 on another node (here: a microbatch it never saw) cannot backward without input.
        const EngineResult missing = s0.backward(77, b1.gradInput.toByteArray());
        QVERIFY(!missing.ok);
        // Told by kind (the words are free to change): send the forward's input.
        QCOMPARE(missing.errorKind, ErrorKind::MissingGraph);
        // Relayed with its input, it recomputes.
        EngineTask relayed;
        relayed.kind = EngineTask::Backward;
        relayed.microbatch = 77;
        relayed.gradOutput = b1.gradInput.toByteArray();
        relayed.input = tokenFrame(0);
        const EngineResult recomputed = s0.run(relayed);
        QVERIFY2(recomputed.ok, qPrintable(recomputed.error));
        // A bad gradient for a kept graph is another error: the input would not help.
        const EngineResult bad = s0.backward(5, QByteArrayLiteral("not a gradient"));
        QVERIFY(!bad.ok);
        QVERIFY(bad.errorKind != ErrorKind::MissingGraph);
    }

    void stepOverEverythingAccumulatedReportsTheCount() {
        Stage s0, s1;
        QVERIFY(s0.load(0));
        QVERIFY(s1.load(1));
        for (std::int64_t mb : {10, 11, 12}) {
            const EngineResult f0 = s0.forward(mb, tokenFrame(int(mb)));
            const EngineResult fb = s1.forwardBackward(mb, f0.output.toByteArray(), tokenFrame(int(mb) + 1));
            QVERIFY2(fb.ok, qPrintable(fb.error));
            QVERIFY(s0.backward(mb, fb.gradInput.toByteArray()).ok);
        }
        const EngineResult all = s0.step(EngineTask::kAllAccumulated);
        QVERIFY2(all.ok, qPrintable(all.error));
        QCOMPARE(all.microbatches, 3);
        const EngineResult last = s1.step(EngineTask::kAllAccumulated);
        QCOMPARE(last.microbatches, 3);
        // Nothing since: the step applies none.
        const EngineResult none = s0.step(EngineTask::kAllAccumulated);
        QVERIFY(none.ok);
        QCOMPARE(none.microbatches, 0);
    }

    void partitionsGatherApplyTheDeltaAndSet() {
        Stage s0;
        QVERIFY(s0.load(0));
        const EngineResult snapshot = s0.gather(3, 20);
        QVERIFY2(snapshot.ok, qPrintable(snapshot.error));
        QVERIFY(!snapshot.values.empty());
        // The delta rule moves the partition by (average − snapshot).
        std::vector<float> average = snapshot.values;
        for (float& v : average)
            v += 0.25f;
        const EngineResult applied = s0.applyDelta(3, 20, average, snapshot.values);
        QVERIFY2(applied.ok, qPrintable(applied.error));
        const EngineResult after = s0.gather(3, 20);
        QCOMPARE(after.values.size(), snapshot.values.size());
        for (std::size_t i = 0; i < after.values.size(); ++i)
            QVERIFY(std::abs(after.values[i] - (snapshot.values[i] + 0.25f)) < 1e-5f);

        // All partitions at once: set, read back, and a wrong size changes nothing.
        const EngineResult all = s0.gather(-1, 20);
        QVERIFY(all.ok);
        std::vector<float> halved = all.values;
        for (float& v : halved)
            v *= 0.5f;
        QVERIFY(s0.setWeights(-1, 20, halved).ok);
        QVERIFY(s0.gather(-1, 20).values == halved);
        const EngineResult wrong = s0.setWeights(-1, 20, std::vector<float>(5, 1.f));
        QVERIFY(!wrong.ok);
        QVERIFY(!wrong.error.isEmpty());
        QVERIFY(s0.gather(-1, 20).values == halved);
        QVERIFY(!s0.gather(20, 20).ok);
    }

    void loadErrorsAreReported() {
        Stage s;
        EngineLoadOptions options;
        options.engine.config = tinyTwoStages();
        options.engine.stage = 7;
        s.worker->load(options);
        QTRY_COMPARE_WITH_TIMEOUT(s.loaded.size(), std::size_t(1), 60'000);
        QVERIFY(!s.loaded.front().isEmpty());
        // A task without a stage is an error, not a hang.
        const EngineResult r = s.forward(1, tokenFrame(0));
        QVERIFY(!r.ok);
    }

    void softPauseStopsComputeAndResumes() {
        Stage s0;
        QVERIFY(s0.load(0));
        s0.submitProbes(400);
        QTRY_VERIFY_WITH_TIMEOUT(s0.finished.size() >= 3, 30'000);

        s0.worker->setPaused(true);
        QVERIFY(s0.waitPaused(1));
        QCOMPARE(s0.paused.at(0), true);
        // Every result comes before pausedChanged(true): nothing may finish (or start) after it.
        const std::size_t done = s0.finished.size();
        QVERIFY(done < 400);
        QTest::qWait(500);
        QCOMPARE(s0.finished.size(), done);

        s0.worker->setPaused(false);
        QVERIFY(s0.waitPaused(2));
        QCOMPARE(s0.paused.at(1), false);
        QTRY_VERIFY_WITH_TIMEOUT(s0.finished.size() >= done + 3, 30'000);
        for (const EngineResult& r : s0.finished)
            QVERIFY2(r.ok, qPrintable(r.error));
    }

    void aFloodOfTasksIsRefusedPastTheQueuesBounds() {
        // Tried: a hostile coordinator floods a paused node with 4,200 forward tasks, then with
        // syncs of the largest size a message may have (256 MiB of weights each). What a user would
        // notice otherwise: the node's memory growing until the machine swaps or the node is killed.
        Stage s0;
        QVERIFY(s0.load(0));
        s0.worker->setPaused(true);
        QVERIFY(s0.waitPaused(1));
        const QByteArray tokens = tokenFrame(1);
        const int flood = int(EngineQueue::kMaxTasks) + 104;
        for (int i = 0; i < flood; ++i) {
            EngineTask t;
            t.taskId = s0.nextTaskId++;
            t.kind = EngineTask::Forward;
            t.microbatch = i;
            t.input = tokens;
            s0.worker->submit(t);
        }
        // The 104 past the bound are answered at once (the coordinator retries them elsewhere);
        // the 4,096 wait.
        QTRY_COMPARE_WITH_TIMEOUT(s0.finished.size(), std::size_t(104), 30'000);
        for (const EngineResult& r : s0.finished) {
            QVERIFY(!r.ok);
            QCOMPARE(r.error, QStringLiteral("the engine's queue is full (4096 tasks)"));
        }
        s0.worker->discardQueuedWork();
        s0.finished.clear();

        // Five syncs of 256 MiB: the first four fill the 1 GiB, the fifth is refused. The values
        // are shared by copy-on-write here, so the test itself holds one message.
        const QByteArray weights(qsizetype(256) << 20, '\0');
        for (int i = 0; i < 5; ++i) {
            EngineTask t;
            t.taskId = s0.nextTaskId++;
            t.kind = EngineTask::SetWeights;
            t.message = weights;
            s0.worker->submit(t);
        }
        QTRY_COMPARE_WITH_TIMEOUT(s0.finished.size(), std::size_t(1), 30'000);
        QVERIFY2(s0.finished.at(0).error.contains(QStringLiteral("1024 MiB waiting, at most 1024 MiB")),
                 qPrintable(s0.finished.at(0).error));
        s0.worker->discardQueuedWork();
    }

    void aStepWhilePausedWaitsForTheResume() {
        Stage s0;
        QVERIFY(s0.load(0));
        s0.worker->setPaused(true);
        QVERIFY(s0.waitPaused(1));
        EngineTask step;
        step.taskId = 1;
        step.kind = EngineTask::Step;
        step.microbatches = 1;
        s0.worker->submit(step);
        QTest::qWait(300);
        QCOMPARE(s0.finished.size(), std::size_t(0));
        s0.worker->setPaused(false);
        QTRY_COMPARE_WITH_TIMEOUT(s0.finished.size(), std::size_t(1), 10'000);
        QVERIFY(s0.finished.front().ok);
    }

    // Loose on purpose: timing belongs to bench_node_engine (30.0/59.3/99.8% at 30/60/100%);
    // this only catches a throttle that does nothing (share near 1) or stalls (near 0). A busy
    // CI machine firing the rest timer late only lowers the share, hence the wide lower side.
    void halfLimitHoldsRoughlyHalfTheTime() {
        Stage s0;
        QVERIFY(s0.load(0));
        s0.worker->setLimit(0.5);
        s0.submitProbes(2000, 4, 64);
        QTRY_VERIFY_WITH_TIMEOUT(s0.finished.size() >= 2, 30'000);
        const std::size_t first = s0.finished.size();
        // Five whole duty cycles at least, however slowly a loaded machine runs them.
        QTRY_VERIFY_WITH_TIMEOUT(s0.finished.size() >= first + 5, 60'000);
        s0.worker->setPaused(true);
        QVERIFY(s0.waitPaused(1));
        // Share over [end of a task, end of the last]: whole duty cycles (rest + task) only.
        const qint64 from = s0.finished.at(first - 1).finishedNs;
        const qint64 to = s0.finished.back().finishedNs;
        double busy = 0;
        for (std::size_t i = first; i < s0.finished.size(); ++i)
            busy += s0.finished.at(i).computeSeconds;
        const double share = busy / (double(to - from) / 1e9);
        QVERIFY2(share > 0.15 && share < 0.75, qPrintable(QString::number(share)));
    }
};

QTEST_GUILESS_MAIN(TestEngineWorker)
#include "test_engine_worker.moc"
