// SPDX-License-Identifier: Apache-2.0
// Bisection on real tensors of the tiny model (3 stages, CPU) through a real Router and a real
// Reexecution whose nodes the test answers: with two replicas a disputed forward used to end
// unsettled; now both are asked for the forward's trace (the residual after each block) and the
// coordinator recomputes the one segment where they part with the checkpoint's weights of that block
// alone. A node that lied in its answer alone (its trace honest) is convicted at the encoding; one
// whose trace lies from a block on is convicted at that block; the honest one is verified either way;
// a node that does not answer its trace is struck; once the stage's weights moved nothing is judged.
// Backwards the same way: a flipped gradient convicted at the gradient's encoding, a lying backward trace
// at the block whose backward the coordinator recomputes, a last stage's made-up loss at its loss.
// A lone replica (nothing to re-execute its work) is spot-checked on its own trace: honest work passes at
// whatever segment is drawn, a lie in the answer is convicted at the encoding, a trace made up to fit the
// lie at the block it made up once that block is drawn, silence is struck. A node that left before its trace
// came (its socket closed, or it paused) is not struck the first time in a day — a crash and a game look the
// same — but is the second; one the coordinator took off (moved, synced again) never is.
#include "TrustFrames.h"
#include "coordinator/router/Router.h"
#include "coordinator/trust/Bisection.h"
#include "coordinator/trust/Reexecution.h"
#include "protocol/TaskMessage.h"

using namespace tessera;
using namespace tessera::coordinator;
using namespace tessera::test;

namespace {

struct Sent {
    QString node;
    qint64 taskId = 0;
    bool trace = false;
};

} // namespace

class TestBisection final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void aLieInTheAnswerAloneIsConvictedAtTheEncoding();
    void aLyingTraceIsConvictedAtTheBlockItPartsAt();
    void aSilentNodeIsStruck();
    void weightsThatMovedJudgeNothing();
    void aGradientLieIsConvictedAtTheGradientsEncoding();
    void aLyingBackwardTraceIsConvictedAtItsBlock();
    void aLastStageLyingInItsLossIsConvicted();
    void aLoneReplicasHonestWorkPassesItsSpotChecks();
    void aLoneReplicasLieIsConvictedAtTheEncoding();
    void aLoneReplicasTraceMadeUpToFitItsLieIsFound();
    void aLoneReplicaSilentOnItsTraceIsStruck();
    void aNodeThatLeavesIsStruckOnlyOnItsSecondDepartureInADay();
    void aNodeTheCoordinatorTookOffIsNeverStruck();

private:
    struct Run {
        std::unique_ptr<Router> router;
        std::unique_ptr<Reexecution> reexecution;
        std::unique_ptr<Bisection> bisection;
        std::vector<Sent> sent;
        std::vector<ReexecutionVerdict> verdicts;
        qint64 now = 1'000'000;
    };
    // Two replicas "a" and "b" on the task's stage; "a" answered `lie`, "b" re-executed it honestly: the
    // case goes to the bisection, which asks both for traces. By default a forward of stage 1 with noise.
    struct Dispute {
        int stage = 1;
        protocol::TaskKind kind = protocol::TaskKind::Forward;
        QByteArray lie;                   // a's answer (empty: noise on the honest one)
        std::optional<double> lieLoss;    // a's loss (the last stage)
        std::optional<double> honestLoss; // b's
    };
    std::unique_ptr<Run> dispute(const Dispute& d);
    std::unique_ptr<Run> dispute(); // a forward of stage 1
    // "a" alone on the task's stage, its answer `answered` spot-checked (the trace asked, not answered yet).
    std::unique_ptr<Run> spotCheck(const Dispute& d, const QByteArray& answered,
                                   std::optional<double> loss = {});
    std::unique_ptr<Run> makeRun(int stage, bool replica);
    Microbatch microbatch(const Run& run, const Dispute& d) const;
    QByteArray honestOutput(const Dispute& d) const;
    // Answers the trace asked of `node`, computed by the stage's engine; rows from `scaledFrom` on
    // (residuals for a forward, gradients below the top for a backward) times `scale`.
    void answerTrace(Run& run, const QString& node, const Dispute& d, float scale = 1);
    void answerTrace(Run& run, const QString& node) { answerTrace(run, node, Dispute{}); }
    void answer(Run& run, const QString& node, const QByteArray& payload, protocol::TaskFrameType type,
                protocol::TaskKind kind = protocol::TaskKind::Forward, std::optional<double> loss = {});

    gpu::ModelConfig m_config = tinyThreeStages();
    std::vector<std::unique_ptr<gpu::StageEngine>> m_engines;
    Trip m_trip;
};

void TestBisection::initTestCase() {
    m_trip = trip(m_config, m_engines, 0);
}

QByteArray TestBisection::honestOutput(const Dispute& d) const {
    return d.kind == protocol::TaskKind::Forward ? m_trip.act1 : d.stage == 1 ? m_trip.grad1 : m_trip.grad2;
}

std::unique_ptr<TestBisection::Run> TestBisection::dispute() {
    return dispute(Dispute{});
}

std::unique_ptr<TestBisection::Run> TestBisection::makeRun(int stage, bool replica) {
    auto run = std::make_unique<Run>();
    Run* r = run.get();
    RouterSettings settings;
    settings.scheduler.minDeadlineMs = 1000;
    run->router = std::make_unique<Router>(
        3, std::vector<qint64>{1000, 1000, 1000}, settings,
        [r](const QString& node, const QByteArray& m) {
            Result<protocol::TaskMessage> decoded = protocol::decodeTaskMessage(m);
            if (!decoded)
                return false;
            r->sent.push_back(Sent{node, decoded->header.value(u"task_id").toInteger(),
                                   decoded->header.value(u"trace").toBool()});
            return true;
        },
        [] { return std::optional<MicrobatchInput>(); });
    run->router->setClock([r] { return r->now; });
    for (int other = 0; other < 3; ++other)
        if (other != stage)
            run->router->addNode(QStringLiteral("s%1").arg(other), other);
    run->router->addNode(QStringLiteral("a"), stage);
    if (replica)
        run->router->addNode(QStringLiteral("b"), stage);
    run->router->stepSent();
    Result<std::unique_ptr<Reexecution>> re = Reexecution::create(
        m_config, ReexecutionSettings{}, *run->router, [r] { return r->now; },
        [](const QString& node) { return node; });
    // The checkpoint's weights: the engine the trip ran on (nothing stepped it).
    gpu::StageEngine* reference = m_engines[std::size_t(stage)].get();
    Result<std::unique_ptr<Bisection>> bi =
        Bisection::create(m_config, 0.05, *run->router, [reference](int, qint64 offset, qint64 count) {
            return reference->weightsRange(offset, count);
        });
    if (!re || !bi)
        qFatal("setup failed");
    run->reexecution = std::move(*re);
    run->bisection = std::move(*bi);
    Bisection* bisection = run->bisection.get();
    run->reexecution->setSettle([bisection](const CheckTask& task, qint64 era, const ReexecutionVerdict& v,
                                            const QString& a, const protocol::HeldFrame& oa,
                                            std::optional<double> la, const QString& b,
                                            const protocol::HeldFrame& ob, std::optional<double> lb) {
        return bisection->start(task, era, v, a, oa, la, b, ob, lb);
    });
    connect(run->reexecution.get(), &Reexecution::judged,
            [r](const ReexecutionVerdict& v) { r->verdicts.push_back(v); });
    connect(run->bisection.get(), &Bisection::judged,
            [r](const ReexecutionVerdict& v) { r->verdicts.push_back(v); });
    return run;
}

Microbatch TestBisection::microbatch(const Run& run, const Dispute& d) const {
    using protocol::TaskFrameType;
    Microbatch mb;
    mb.id = 7;
    mb.batch = kBatch;
    mb.seq = kSeq;
    mb.tokens = kBatch * kSeq;
    mb.stage = d.stage;
    mb.inputs = {protocol::holdPayload(m_trip.tokens, TaskFrameType::ForwardInput),
                 protocol::holdPayload(m_trip.act0, TaskFrameType::ForwardInput),
                 protocol::holdPayload(m_trip.act1, TaskFrameType::ForwardInput)};
    mb.targets = protocol::holdPayload(m_trip.targets, TaskFrameType::Targets);
    if (d.kind == protocol::TaskKind::Backward)
        mb.gradient = protocol::holdPayload(m_trip.grad2, TaskFrameType::BackwardInput);
    mb.taskNode = QStringLiteral("a");
    mb.taskEra = run.router->era(d.stage);
    return mb;
}

std::unique_ptr<TestBisection::Run> TestBisection::dispute(const Dispute& d) {
    using protocol::TaskFrameType;
    std::unique_ptr<Run> run = makeRun(d.stage, true);
    const Microbatch mb = microbatch(*run, d);
    const bool forward = d.kind == protocol::TaskKind::Forward;
    const TaskFrameType type = forward ? TaskFrameType::ForwardOutput : TaskFrameType::BackwardOutput;
    const QByteArray lied = d.lie.isEmpty() ? lie(m_config, "noise", honestOutput(d), forward) : d.lie;
    if (!run->reexecution->start(QStringLiteral("a"), mb, d.kind, protocol::holdPayload(lied, type),
                                 d.lieLoss))
        qFatal("not re-executed");
    answer(*run, QStringLiteral("b"), honestOutput(d), type, d.kind, d.honestLoss); // b's honest re-execution
    return run;
}

std::unique_ptr<TestBisection::Run> TestBisection::spotCheck(const Dispute& d, const QByteArray& answered,
                                                             std::optional<double> loss) {
    std::unique_ptr<Run> run = makeRun(d.stage, false);
    const Microbatch mb = microbatch(*run, d);
    const bool forward = d.kind == protocol::TaskKind::Forward;
    const protocol::TaskFrameType type =
        forward ? protocol::TaskFrameType::ForwardOutput : protocol::TaskFrameType::BackwardOutput;
    // Alone on its stage: nothing to re-execute it, so the spot check takes it.
    if (run->reexecution->start(QStringLiteral("a"), mb, d.kind, protocol::holdPayload(answered, type), loss))
        qFatal("re-executed with no other replica");
    if (!run->bisection->spotCheck(CheckTask::of(mb, d.kind), mb.taskEra, QStringLiteral("a"),
                                   protocol::holdPayload(answered, type), loss, run->now))
        qFatal("not spot-checked");
    return run;
}

void TestBisection::answer(Run& run, const QString& node, const QByteArray& payload,
                           protocol::TaskFrameType type, protocol::TaskKind kind,
                           std::optional<double> loss) {
    const auto it =
        std::find_if(run.sent.begin(), run.sent.end(), [&](const Sent& s) { return s.node == node; });
    QVERIFY2(it != run.sent.end(), qPrintable(QStringLiteral("nothing was asked of %1").arg(node)));
    const Sent s = *it;
    run.sent.erase(it);
    protocol::TaskResult result;
    result.taskId = s.taskId;
    result.kind = kind;
    result.microbatch = 7;
    result.ok = true;
    result.loss = loss;
    const QByteArray bytes = protocol::TaskMessageBuilder(protocol::toJson(result)).add(type, payload).take();
    Result<protocol::TaskMessage> m = protocol::decodeTaskMessage(bytes);
    QVERIFY(m);
    run.router->onResult(node, result, *m);
}

void TestBisection::answerTrace(Run& run, const QString& node, const Dispute& d, float scale) {
    const auto it =
        std::find_if(run.sent.begin(), run.sent.end(), [&](const Sent& s) { return s.node == node; });
    QVERIFY2(it != run.sent.end() && it->trace,
             qPrintable(QStringLiteral("no trace was asked of %1").arg(node)));
    gpu::StageEngine& engine = *m_engines[std::size_t(d.stage)];
    const int blocks = engine.blocks();
    Result<std::vector<float>> trace =
        d.kind == protocol::TaskKind::Forward ? engine.traceForward(span(m_trip.act0))
        : d.stage == 1 ? engine.traceBackward(span(m_trip.grad2), span(m_trip.act0), {})
                       : engine.traceBackward({}, span(m_trip.act1), span(m_trip.targets));
    QVERIFY2(trace, trace ? "" : trace.message().c_str());
    const std::size_t size = std::size_t(kBatch * kSeq * m_config.dModel);
    // A forward's lie from the residual after block 1 on; a backward's from the gradient below the top.
    const std::size_t from = d.kind == protocol::TaskKind::Forward ? size : size * std::size_t(blocks + 1);
    const std::size_t to =
        d.kind == protocol::TaskKind::Forward ? trace->size() : size * std::size_t(2 * blocks + 1);
    for (std::size_t i = from; i < to; ++i)
        (*trace)[i] *= scale;
    answer(run, node, protocol::gradientPayload(*trace, 32), protocol::TaskFrameType::Partition);
}

void TestBisection::aLieInTheAnswerAloneIsConvictedAtTheEncoding() {
    std::unique_ptr<Run> run = dispute();
    QVERIFY(run->verdicts.empty()); // not unsettled: bisected
    QCOMPARE(run->bisection->started(), qint64(1));
    QVERIFY(run->bisection->pendingOn(1));
    answerTrace(*run, QStringLiteral("a")); // its trace is honest: only its answer lied
    answerTrace(*run, QStringLiteral("b"));
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    const ReexecutionVerdict& v = run->verdicts[0];
    QCOMPARE(v.convicted, QStringList{QStringLiteral("a")});
    QCOMPARE(v.verified, QStringList{QStringLiteral("b")});
    QVERIFY(!v.unsettled);
    QVERIFY2(v.reason.contains(u"encoding"), qPrintable(v.reason));
    QVERIFY(!run->bisection->pendingOn(1));
}

void TestBisection::aLyingTraceIsConvictedAtTheBlockItPartsAt() {
    QVERIFY(m_engines[1]->blocks() >= 2);
    std::unique_ptr<Run> run = dispute();
    answerTrace(*run, QStringLiteral("a"), Dispute{},
                1.5f); // its residuals from block 1 on are not the stage's
    answerTrace(*run, QStringLiteral("b"));
    const ReexecutionVerdict& v = run->verdicts.back();
    QCOMPARE(v.convicted, QStringList{QStringLiteral("a")});
    QCOMPARE(v.verified, QStringList{QStringLiteral("b")});
    QVERIFY2(v.reason.contains(u"block 1"), qPrintable(v.reason));
}

void TestBisection::aSilentNodeIsStruck() {
    std::unique_ptr<Run> run = dispute();
    answerTrace(*run, QStringLiteral("b"));
    run->now += 60'000;
    run->router->tick(); // a's trace missed its deadline
    const ReexecutionVerdict& v = run->verdicts.back();
    QCOMPARE(v.struck, QStringList{QStringLiteral("a")});
    QVERIFY(v.convicted.isEmpty());
}

void TestBisection::weightsThatMovedJudgeNothing() {
    std::unique_ptr<Run> run = dispute();
    answerTrace(*run, QStringLiteral("a"));
    run->router->stepSent(); // the step's update reached the stage: the checkpoint holds other weights
    answerTrace(*run, QStringLiteral("b"));
    const ReexecutionVerdict& v = run->verdicts.back();
    QVERIFY(v.unsettled);
    QVERIFY(v.convicted.isEmpty() && v.verified.isEmpty());
}

void TestBisection::aGradientLieIsConvictedAtTheGradientsEncoding() {
    // A middle stage's backward: a sends its gradient flipped, its trace honest.
    const Dispute d{1, protocol::TaskKind::Backward, lie(m_config, "flip", m_trip.grad1, false), {}, {}};
    std::unique_ptr<Run> run = dispute(d);
    QCOMPARE(run->bisection->started(), qint64(1));
    answerTrace(*run, QStringLiteral("a"), d);
    answerTrace(*run, QStringLiteral("b"), d);
    const ReexecutionVerdict& v = run->verdicts.back();
    QCOMPARE(v.convicted, QStringList{QStringLiteral("a")});
    QCOMPARE(v.verified, QStringList{QStringLiteral("b")});
    QVERIFY2(v.reason.contains(u"encoding of its gradient"), qPrintable(v.reason));
}

void TestBisection::aLyingBackwardTraceIsConvictedAtItsBlock() {
    // Its gradients below the top block are not the stage's: the coordinator recomputes the top block's
    // backward from the agreed gradient after it and the agreed residual before it.
    const Dispute d{1, protocol::TaskKind::Backward, lie(m_config, "scale", m_trip.grad1, false), {}, {}};
    std::unique_ptr<Run> run = dispute(d);
    answerTrace(*run, QStringLiteral("a"), d, 1.5f);
    answerTrace(*run, QStringLiteral("b"), d);
    const ReexecutionVerdict& v = run->verdicts.back();
    QCOMPARE(v.convicted, QStringList{QStringLiteral("a")});
    QCOMPARE(v.verified, QStringList{QStringLiteral("b")});
    QVERIFY2(v.reason.contains(QStringLiteral("block %1's backward").arg(m_engines[1]->blocks() - 1)),
             qPrintable(v.reason));
}

void TestBisection::aLastStageLyingInItsLossIsConvicted() {
    // The last stage's forward_backward: an honest gradient and a made-up loss (2.0).
    const Dispute d{2, protocol::TaskKind::ForwardBackward, m_trip.grad2, 2.0, m_trip.loss};
    std::unique_ptr<Run> run = dispute(d);
    QCOMPARE(run->bisection->started(), qint64(1));
    answerTrace(*run, QStringLiteral("a"), d);
    answerTrace(*run, QStringLiteral("b"), d);
    const ReexecutionVerdict& v = run->verdicts.back();
    QCOMPARE(v.convicted, QStringList{QStringLiteral("a")});
    QCOMPARE(v.verified, QStringList{QStringLiteral("b")});
}

void TestBisection::aLoneReplicasHonestWorkPassesItsSpotChecks() {
    // Every kind a lone replica answers, each checked at a segment drawn anew: a forward of stage 1, its
    // backward, the last stage's forward_backward.
    const std::vector<Dispute> kinds{Dispute{}, Dispute{1, protocol::TaskKind::Backward, {}, {}, {}},
                                     Dispute{2, protocol::TaskKind::ForwardBackward, {}, {}, m_trip.loss}};
    for (const Dispute& d : kinds)
        for (int i = 0; i < 6; ++i) {
            std::unique_ptr<Run> run = spotCheck(d, honestOutput(d), d.honestLoss);
            QVERIFY(run->bisection->pendingOn(d.stage)); // its stage's step waits for the trace
            answerTrace(*run, QStringLiteral("a"), d);
            QCOMPARE(run->verdicts.size(), std::size_t(1));
            const ReexecutionVerdict& v = run->verdicts[0];
            QVERIFY2(v.convicted.isEmpty() && v.struck.isEmpty(), qPrintable(v.reason));
            QCOMPARE(v.verified, QStringList{QStringLiteral("a")});
            QCOMPARE(run->bisection->spotChecksPassed(), qint64(1));
            QVERIFY(!run->bisection->pendingOn(d.stage));
        }
}

void TestBisection::aLoneReplicasLieIsConvictedAtTheEncoding() {
    // Noise in its forward, a flipped backward, a made-up loss: its trace honest, its answer not what the
    // trace leads to.
    const Dispute forward{};
    const Dispute backward{
        1, protocol::TaskKind::Backward, lie(m_config, "flip", m_trip.grad1, false), {}, {}};
    const Dispute last{2, protocol::TaskKind::ForwardBackward, m_trip.grad2, 2.0, m_trip.loss};
    for (const auto& [d, answered] : {std::pair{forward, lie(m_config, "noise", m_trip.act1, true)},
                                      std::pair{backward, backward.lie}, std::pair{last, last.lie}}) {
        std::unique_ptr<Run> run = spotCheck(d, answered, d.lieLoss);
        answerTrace(*run, QStringLiteral("a"), d);
        const ReexecutionVerdict& v = run->verdicts.back();
        QCOMPARE(v.convicted, QStringList{QStringLiteral("a")});
        QVERIFY2(v.reason.contains(u"encoding") && v.reason.contains(u"spot check"), qPrintable(v.reason));
        QCOMPARE(run->bisection->spotConvictions(), qint64(1));
        QCOMPARE(run->bisection->convictions(), qint64(0));
    }
}

void TestBisection::aLoneReplicasTraceMadeUpToFitItsLieIsFound() {
    // A planning liar: its residuals from block 1 on × 1.5, and its answer the encoding of that made-up last
    // residual, so answer and trace agree. Only the recompute of block 1 parts from it, and the segment is
    // drawn after the trace came: over 24 checks it is drawn (each misses it with probability 1 − 1/blocks),
    // and no other segment convicts.
    gpu::StageEngine& engine = *m_engines[1];
    const int blocks = engine.blocks();
    QVERIFY(blocks >= 2);
    Result<std::vector<float>> trace = engine.traceForward(span(m_trip.act0));
    QVERIFY(trace);
    const std::size_t size = std::size_t(kBatch * kSeq * m_config.dModel);
    std::vector<float> lastRow(trace->end() - std::ptrdiff_t(size), trace->end());
    for (float& x : lastRow)
        x *= 1.5f;
    Result<gpu::Bytes> made = engine.encodeOutput(span(m_trip.act0), lastRow);
    QVERIFY(made);
    const QByteArray answered(reinterpret_cast<const char*>(made->data()), qsizetype(made->size()));
    int convicted = 0, passed = 0;
    for (int i = 0; i < 24; ++i) {
        std::unique_ptr<Run> run = spotCheck(Dispute{}, answered);
        answerTrace(*run, QStringLiteral("a"), Dispute{}, 1.5f);
        const ReexecutionVerdict& v = run->verdicts.back();
        if (!v.convicted.isEmpty()) {
            ++convicted;
            // Block 1 on: the rows it made up (a block after it recomputed from a made-up row parts too).
            QVERIFY2(v.reason.contains(u"block ") && !v.reason.contains(u"block 0"), qPrintable(v.reason));
        } else {
            QCOMPARE(v.verified, QStringList{QStringLiteral("a")});
            ++passed;
        }
    }
    QVERIFY2(convicted >= 1, qPrintable(QStringLiteral("convicted in %1 of 24 checks").arg(convicted)));
    qInfo("the made-up trace: convicted in %d of 24 spot checks, passed %d (%d blocks)", convicted, passed,
          blocks);
}

void TestBisection::aLoneReplicaSilentOnItsTraceIsStruck() {
    std::unique_ptr<Run> run = spotCheck(Dispute{}, m_trip.act1);
    run->now += 60'000;
    run->router->tick(); // its trace missed its deadline
    const ReexecutionVerdict& v = run->verdicts.back();
    QCOMPARE(v.struck, QStringList{QStringLiteral("a")});
    QVERIFY(v.convicted.isEmpty() && v.verified.isEmpty());
}

void TestBisection::aNodeThatLeavesIsStruckOnlyOnItsSecondDepartureInADay() {
    std::unique_ptr<Run> run = spotCheck(Dispute{}, m_trip.act1);
    const auto leaveWhileChecked = [&] {
        run->router->removeNode(QStringLiteral("a"), QStringLiteral("disconnected")); // a crash, or a pause
        return run->verdicts.back();
    };
    const auto checkedAgain = [&] { // back, and spot-checked again
        run->router->addNode(QStringLiteral("a"), 1);
        run->router->stepSent();
        const Microbatch mb = microbatch(*run, Dispute{});
        QVERIFY(run->bisection->spotCheck(CheckTask::of(mb, protocol::TaskKind::Forward), mb.taskEra,
                                          QStringLiteral("a"),
                                          protocol::holdPayload(m_trip.act1, protocol::TaskFrameType::ForwardOutput),
                                          std::nullopt, run->now));
    };
    ReexecutionVerdict v = leaveWhileChecked();
    QVERIFY2(v.struck.isEmpty() && v.unsettled, qPrintable(v.reason));
    QCOMPARE(v.disputed, QStringList{QStringLiteral("a")}); // on probation: checked more, paid later
    QVERIFY2(v.reason.contains(u"not struck"), qPrintable(v.reason));
    // An hour on, gone again while checked: a node that leaves whenever it is asked.
    run->now += 3'600'000;
    checkedAgain();
    v = leaveWhileChecked();
    QCOMPARE(v.struck, QStringList{QStringLiteral("a")});
    QVERIFY(!v.unsettled);
    // A day after its excused departure, one departure is excused again.
    run->now += 24 * 3'600'000LL;
    checkedAgain();
    v = leaveWhileChecked();
    QVERIFY2(v.struck.isEmpty() && v.unsettled, qPrintable(v.reason));
}

void TestBisection::aNodeTheCoordinatorTookOffIsNeverStruck() {
    std::unique_ptr<Run> run = spotCheck(Dispute{}, m_trip.act1);
    for (int round = 0; round < 3; ++round) {
        if (round > 0) {
            run->router->addNode(QStringLiteral("a"), 1);
            run->router->stepSent();
            const Microbatch mb = microbatch(*run, Dispute{});
            QVERIFY(run->bisection->spotCheck(
                CheckTask::of(mb, protocol::TaskKind::Forward), mb.taskEra, QStringLiteral("a"),
                protocol::holdPayload(m_trip.act1, protocol::TaskFrameType::ForwardOutput), std::nullopt, run->now));
        }
        run->router->removeNode(QStringLiteral("a"), QStringLiteral("moved to stage 2"), CheckSilence::Withdrawn);
        const ReexecutionVerdict& v = run->verdicts.back();
        QVERIFY2(v.struck.isEmpty() && v.unsettled, qPrintable(v.reason));
    }
    QCOMPARE(run->verdicts.size(), std::size_t(3));
}

QTEST_GUILESS_MAIN(TestBisection)
#include "test_bisection.moc"
