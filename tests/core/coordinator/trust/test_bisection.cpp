// SPDX-License-Identifier: Apache-2.0
// Bisection on real tensors of the tiny model (3 stages, CPU) through a real Router and a real
// Reexecution whose nodes the test answers: with two replicas a disputed forward used to end
// unsettled; now both are asked for the forward's trace (the residual after each block) and the
// coordinator recomputes the one segment where they part with the checkpoint's weights of that block
// alone. A node that lied in its answer alone (its trace honest) is convicted at the encoding; one
// whose trace lies from a block on is convicted at that block; the honest one is verified either way;
// a node that does not answer its trace is struck; once the stage's weights moved nothing is judged.
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

private:
    struct Run {
        std::unique_ptr<Router> router;
        std::unique_ptr<Reexecution> reexecution;
        std::unique_ptr<Bisection> bisection;
        std::vector<Sent> sent;
        std::vector<ReexecutionVerdict> verdicts;
        qint64 now = 1'000'000;
    };
    // Two replicas "a" and "b" on stage 1; "a" answered a forward with noise, "b" re-executed it
    // honestly: the case goes to the bisection, which asks both for traces.
    std::unique_ptr<Run> dispute();
    // Answers the trace asked of `node` (the residuals of blocks ≥ 1 times laterBlocksScale).
    void answerTrace(Run& run, const QString& node, float laterBlocksScale = 1);
    void answer(Run& run, const QString& node, const QByteArray& payload, protocol::TaskFrameType type);

    gpu::ModelConfig m_config = tinyThreeStages();
    std::vector<std::unique_ptr<gpu::StageEngine>> m_engines;
    Trip m_trip;
};

void TestBisection::initTestCase() {
    m_trip = trip(m_config, m_engines, 0);
}

std::unique_ptr<TestBisection::Run> TestBisection::dispute() {
    using protocol::TaskFrameType;
    auto run = std::make_unique<Run>();
    Run* r = run.get();
    RouterSettings settings;
    settings.scheduler.minDeadlineMs = 1000;
    run->router = std::make_unique<Router>(
        3, std::vector<qint64>{1000, 1000, 1000}, settings,
        [r](const QString& node, const QByteArray& m) {
            Result<protocol::TaskMessage> d = protocol::decodeTaskMessage(m);
            if (!d)
                return false;
            r->sent.push_back(
                Sent{node, d->header.value(u"task_id").toInteger(), d->header.value(u"trace").toBool()});
            return true;
        },
        [] { return std::optional<MicrobatchInput>(); });
    run->router->setClock([r] { return r->now; });
    run->router->addNode(QStringLiteral("s0"), 0);
    run->router->addNode(QStringLiteral("s2"), 2);
    run->router->addNode(QStringLiteral("a"), 1);
    run->router->addNode(QStringLiteral("b"), 1);
    run->router->stepSent();
    Result<std::unique_ptr<Reexecution>> re = Reexecution::create(
        m_config, ReexecutionSettings{}, *run->router, [r] { return r->now; },
        [](const QString& node) { return node; });
    // The checkpoint's weights: the engine the trip ran on (nothing stepped it).
    gpu::StageEngine* reference = m_engines[1].get();
    Result<std::unique_ptr<Bisection>> bi =
        Bisection::create(m_config, 0.05, *run->router, [reference](int, qint64 offset, qint64 count) {
            return reference->weightsRange(offset, count);
        });
    if (!re || !bi)
        qFatal("setup failed");
    run->reexecution = std::move(*re);
    run->bisection = std::move(*bi);
    Bisection* bisection = run->bisection.get();
    run->reexecution->setSettle(
        [bisection](const CheckTask& task, qint64 era, const ReexecutionVerdict& v, const QString& a,
                    const protocol::HeldFrame& oa, const QString& b,
                    const protocol::HeldFrame& ob) { return bisection->start(task, era, v, a, oa, b, ob); });
    connect(run->reexecution.get(), &Reexecution::judged,
            [r](const ReexecutionVerdict& v) { r->verdicts.push_back(v); });
    connect(run->bisection.get(), &Bisection::judged,
            [r](const ReexecutionVerdict& v) { r->verdicts.push_back(v); });
    Microbatch mb;
    mb.id = 7;
    mb.batch = kBatch;
    mb.seq = kSeq;
    mb.tokens = kBatch * kSeq;
    mb.stage = 1;
    mb.inputs = {protocol::holdPayload(m_trip.tokens, TaskFrameType::ForwardInput),
                 protocol::holdPayload(m_trip.act0, TaskFrameType::ForwardInput),
                 protocol::holdPayload(m_trip.act1, TaskFrameType::ForwardInput)};
    mb.taskNode = QStringLiteral("a");
    mb.taskEra = run->router->era(1);
    const QByteArray lied = lie(m_config, "noise", m_trip.act1, true);
    if (!run->reexecution->start(QStringLiteral("a"), mb, protocol::TaskKind::Forward,
                                 protocol::holdPayload(lied, TaskFrameType::ForwardOutput), std::nullopt))
        qFatal("not re-executed");
    answer(*run, QStringLiteral("b"), m_trip.act1, TaskFrameType::ForwardOutput); // b's honest re-execution
    return run;
}

void TestBisection::answer(Run& run, const QString& node, const QByteArray& payload,
                           protocol::TaskFrameType type) {
    const auto it =
        std::find_if(run.sent.begin(), run.sent.end(), [&](const Sent& s) { return s.node == node; });
    QVERIFY2(it != run.sent.end(), qPrintable(QStringLiteral("nothing was asked of %1").arg(node)));
    const Sent s = *it;
    run.sent.erase(it);
    protocol::TaskResult result;
    result.taskId = s.taskId;
    result.kind = protocol::TaskKind::Forward;
    result.microbatch = 7;
    result.ok = true;
    const QByteArray bytes = protocol::TaskMessageBuilder(protocol::toJson(result)).add(type, payload).take();
    Result<protocol::TaskMessage> m = protocol::decodeTaskMessage(bytes);
    QVERIFY(m);
    run.router->onResult(node, result, *m);
}

void TestBisection::answerTrace(Run& run, const QString& node, float laterBlocksScale) {
    const auto it =
        std::find_if(run.sent.begin(), run.sent.end(), [&](const Sent& s) { return s.node == node; });
    QVERIFY2(it != run.sent.end() && it->trace,
             qPrintable(QStringLiteral("no trace was asked of %1").arg(node)));
    Result<std::vector<float>> trace = m_engines[1]->traceForward(span(m_trip.act0));
    QVERIFY2(trace, trace ? "" : trace.message().c_str());
    const std::size_t perBlock = trace->size() / std::size_t(m_engines[1]->blocks());
    for (std::size_t i = perBlock; i < trace->size(); ++i)
        (*trace)[i] *= laterBlocksScale;
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
    answerTrace(*run, QStringLiteral("a"), 1.5f); // its residuals from block 1 on are not the stage's
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

QTEST_GUILESS_MAIN(TestBisection)
#include "test_bisection.moc"
