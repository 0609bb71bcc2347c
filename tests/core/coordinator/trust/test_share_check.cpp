// SPDX-License-Identifier: Apache-2.0
// ShareCheck on real gradients of the tiny model (3 stages, CPU) through a real Router whose nodes the
// test answers with a real engine's sketch (StageEngine::gradientSketch): a node's share is checked
// against the gradient another replica computes for one of its microbatches. An honest share holds it
// (alignment 1, norm 1× with one microbatch: the sketch is of the very gradient the share carries);
// a share of −9× the honest one fails, a third replica referees and its sender is struck; with two
// replicas the verifier takes a second look at another microbatch, the share is left out and nobody
// is struck; a lying verifier cannot strike an honest share (the referee's look passes it); a
// silent verifier is replaced,
// and with none left the share stands unchecked; a suspect's stage is checked at every step.
// A lone replica (no other replica to sketch its microbatch) is looked at by its own trace through a real
// Bisection: the coordinator recomputes one segment's weights' gradient from the trace's rows. Its honest
// share holds it; a reversed share is left out (struck after two looks); a trace scaled to fit a reversed
// share parts from the gradient it was given or from its own answer and is convicted. With two replicas the
// coordinator referees a share its only verifier failed by the sender's trace: a lying verifier's look is
// contradicted (the honest share stands), a reversed share is struck. A lone first stage (its backwards answer
// no tensor) is looked at the same way: its honest share holds its trace, a reversed one is struck. A share
// whose microbatches passed through a node convicted or struck since (upstream or downstream) is left out, not
// struck: a liar on its route makes an honest share unlike any one of its microbatches.
#include "TrustFrames.h"
#include "coordinator/router/Router.h"
#include "coordinator/trust/Bisection.h"
#include "coordinator/trust/ShareCheck.h"
#include "protocol/TaskMessage.h"

#include <QSignalSpy>

using namespace tessera;
using namespace tessera::coordinator;
using namespace tessera::test;

namespace {

struct Sent {
    QString node;
    qint64 taskId = 0;
    qint64 sketchSeed = 0;
    QList<protocol::TaskFrameType> frames;
    bool trace = false;
};

} // namespace

class TestShareCheck final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void anHonestShareHoldsItsWork();
    void aReversedShareIsStruckWhenARefereeAgrees();
    void withTwoReplicasItIsLeftOutAndNobodyStruck();
    void aLyingVerifierCannotStrikeAnHonestShare();
    void withTwoReplicasTheVerifierTakesASecondLook();
    void aSilentVerifierIsReplacedThenTheShareStands();
    void aSuspectsStageIsCheckedAtEveryStep();
    void aReplicaVerifiesOnlyOnceItsWeightsWereShown();
    void aLoneReplicasHonestShareHoldsItsOwnTrace();
    void aLoneReplicasReversedShareIsLeftOutThenStruck();
    void aTraceScaledToFitAReversedShareIsConvicted();
    void withTwoReplicasTheCoordinatorRefereesByTrace();
    void aShareHoldingRefusedWorkIsLeftOutNotStruck();
    void aLoneFirstStagesShareIsLookedAtByItsTrace();
    void aShareWhoseWorkPassedThroughALiarIsLeftOutNotStruck();

private:
    struct Run {
        std::unique_ptr<Router> router;
        std::unique_ptr<ShareCheck> check;
        std::unique_ptr<Bisection> bisection; // lone replicas' looks (withTraces)
        std::vector<ReexecutionVerdict> traceVerdicts;
        std::vector<Sent> sent;
        std::vector<ShareVerdict> verdicts;
        std::vector<QStringList> judged;
        qint64 now = 1'000'000;
        double draw = 0; // below percent/100: drawn
    };
    std::unique_ptr<Run> makeRun(int replicas, double percent = 100);
    // The run's lone replicas looked at by their traces: a Bisection on the engine the trip ran on.
    void withTraces(Run& run, const std::vector<float>* held = nullptr);
    // Answers the trace asked of `node` (stage 1's backward, by the engine); the gradient rows below the
    // top times `scale`.
    void answerTrace(Run& run, const QString& node, float scale = 1);
    Microbatch microbatch(const Run& run, const QString& node) const;
    // Answers the sketch task sent to `node` with the honest engine's sketch times `scale`.
    void answer(Run& run, const QString& node, float scale = 1);
    // m_share × −9: what the reverse liar sends.
    std::vector<float> reversedShare() const;
    // A second microbatch of a's kept for the step (the same frames under id 8).
    void offerAnother(Run& run);
    // Answers task `taskId` of `node` with `values` (a Partition frame: a sketch, a trace).
    void answerValues(Run& run, const QString& node, qint64 taskId, const std::vector<float>& values);
    // Offers node's microbatch and begins the check of its share `values`.
    bool begin(Run& run, const QString& node, const std::vector<float>& values, qint64 step = 5);

    gpu::ModelConfig m_config = tinyThreeStages();
    std::vector<std::unique_ptr<gpu::StageEngine>> m_engines;
    Trip m_trip;
    std::vector<float> m_share;      // stage 1's honest share of the trip's one microbatch
    std::vector<float> m_firstShare; // stage 0's
    // Node "s0" (alone on stage 0) offers microbatches `ids` (the trip's) and its share `values` is checked.
    bool beginFirst(Run& run, const std::vector<float>& values, const QList<qint64>& ids);
};

void TestShareCheck::initTestCase() {
    m_trip = trip(m_config, m_engines, 0);
    // The trip ran stage 1's backward: what it accumulated is its share of one microbatch.
    Result<gpu::GradientShare> share = m_engines[1]->shareGradients(0, 0, -1, 32);
    QVERIFY(share && share->microbatches == 1);
    m_share = share->values;
    // Stage 0's backward of the same microbatch (from its input: the trip kept no graph there).
    Result<gpu::StageBackwardResult> first = m_engines[0]->backward(1, span(m_trip.grad1), span(m_trip.tokens));
    QVERIFY2(first, first ? "" : first.message().c_str());
    share = m_engines[0]->shareGradients(0, 0, -1, 32);
    QVERIFY(share && share->microbatches == 1);
    m_firstShare = share->values;
}

std::unique_ptr<TestShareCheck::Run> TestShareCheck::makeRun(int replicas, double percent) {
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
            Sent s{node,
                   d->header.value(u"task_id").toInteger(),
                   d->header.value(u"sketch_seed").toInteger(),
                   {},
                   d->header.value(u"trace").toBool()};
            for (const protocol::TaskFrame& f : d->frames)
                s.frames << f.type;
            r->sent.push_back(s);
            return true;
        },
        [] { return std::optional<MicrobatchInput>(); });
    run->router->setClock([r] { return r->now; });
    run->router->addNode(QStringLiteral("s0"), 0);
    run->router->addNode(QStringLiteral("s2"), 2);
    for (int i = 0; i < replicas; ++i)
        run->router->addNode(QString(QChar(u'a' + i)), 1);
    run->router->stepSent();
    ShareCheckSettings s;
    s.percent = percent;
    quint64 seed = 1000;
    run->check = std::make_unique<ShareCheck>(
        s, *run->router,
        [](const QString& node) { return node == u"b" ? QStringLiteral("net-b") : QStringLiteral("net-a"); },
        [r] { return r->draw; }, [seed]() mutable { return ++seed; });
    connect(run->check.get(), &ShareCheck::verdict, [r](const ShareVerdict& v) { r->verdicts.push_back(v); });
    connect(run->check.get(), &ShareCheck::judged,
            [r](qint64, int, const QStringList& dropped) { r->judged.push_back(dropped); });
    return run;
}

Microbatch TestShareCheck::microbatch(const Run& run, const QString& node) const {
    using protocol::TaskFrameType;
    Microbatch mb;
    mb.id = 7;
    mb.step = 5;
    mb.batch = kBatch;
    mb.seq = kSeq;
    mb.tokens = kBatch * kSeq;
    mb.stage = 1;
    mb.inputs = {protocol::holdPayload(m_trip.tokens, TaskFrameType::ForwardInput),
                 protocol::holdPayload(m_trip.act0, TaskFrameType::ForwardInput),
                 protocol::holdPayload(m_trip.act1, TaskFrameType::ForwardInput)};
    mb.gradient = protocol::holdPayload(m_trip.grad2, TaskFrameType::BackwardInput);
    mb.forwardVersion = {0, 0, 0};
    mb.taskHasInput = true;
    mb.taskNode = node;
    mb.taskEra = run.router->era(1);
    return mb;
}

bool TestShareCheck::begin(Run& run, const QString& node, const std::vector<float>& values, qint64 step) {
    Microbatch mb = microbatch(run, node);
    mb.step = step;
    run.check->offer(node, mb, protocol::TaskKind::Backward,
                     protocol::holdPayload(m_trip.grad1, protocol::TaskFrameType::BackwardOutput));
    return run.check->begin(step, 1, {ShareView{node, &values, 1}});
}

void TestShareCheck::answer(Run& run, const QString& node, float scale) {
    const auto it =
        std::find_if(run.sent.begin(), run.sent.end(), [&](const Sent& s) { return s.node == node; });
    QVERIFY2(it != run.sent.end(), qPrintable(QStringLiteral("no sketch was asked of %1").arg(node)));
    const Sent s = *it;
    run.sent.erase(it);
    // A sketch task carries a backward's frames (its gradient and its input) and the seed.
    QVERIFY(s.sketchSeed != 0);
    QVERIFY(s.frames.contains(protocol::TaskFrameType::BackwardInput));
    QVERIFY(s.frames.contains(protocol::TaskFrameType::ForwardInput));
    Result<std::vector<float>> sketch =
        m_engines[1]->gradientSketch(span(m_trip.grad2), span(m_trip.act0), {}, quint64(s.sketchSeed));
    QVERIFY2(sketch, sketch ? "" : sketch.message().c_str());
    for (float& v : *sketch)
        v *= scale;
    answerValues(run, node, s.taskId, *sketch);
}

void TestShareCheck::answerValues(Run& run, const QString& node, qint64 taskId, const std::vector<float>& values) {
    protocol::TaskResult result;
    result.taskId = taskId;
    result.kind = protocol::TaskKind::Backward;
    result.microbatch = 7;
    result.ok = true;
    const QByteArray bytes = protocol::TaskMessageBuilder(protocol::toJson(result))
                                 .add(protocol::TaskFrameType::Partition, protocol::gradientPayload(values, 32))
                                 .take();
    Result<protocol::TaskMessage> m = protocol::decodeTaskMessage(bytes);
    QVERIFY(m);
    run.router->onResult(node, result, *m);
}

void TestShareCheck::anHonestShareHoldsItsWork() {
    std::unique_ptr<Run> run = makeRun(3);
    QVERIFY(begin(*run, QStringLiteral("a"), m_share));
    QCOMPARE(run->sent.size(), std::size_t(1));
    QCOMPARE(run->sent[0].node, QStringLiteral("b")); // another network first
    answer(*run, QStringLiteral("b"));
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    const ShareVerdict& v = run->verdicts[0];
    QVERIFY(v.passed && !v.struck && !v.unsettled);
    // The replica's sketch is of the very gradient the share carries: the engine's sketch and the
    // share it accumulated agree (to the sketches' float rounding).
    QVERIFY2(std::abs(v.alignment - 1) < 1e-4 && std::abs(v.normRatio - 1) < 1e-4,
             qPrintable(QStringLiteral("%1 %2").arg(v.alignment).arg(v.normRatio)));
    QCOMPARE(run->judged.size(), std::size_t(1));
    QVERIFY(run->judged[0].isEmpty());
}

void TestShareCheck::aReversedShareIsStruckWhenARefereeAgrees() {
    std::unique_ptr<Run> run = makeRun(3);
    std::vector<float> reversed = m_share;
    for (float& v : reversed)
        v *= -9.0f;
    QVERIFY(begin(*run, QStringLiteral("a"), reversed));
    answer(*run, QStringLiteral("b"));
    QVERIFY(run->verdicts.empty()); // a referee is asked first
    answer(*run, QStringLiteral("c"));
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    const ShareVerdict& v = run->verdicts[0];
    QVERIFY(v.struck && !v.passed);
    QVERIFY(std::abs(v.alignment + 9) < 1e-3);
    QCOMPARE(v.verifiers, (QStringList{QStringLiteral("b"), QStringLiteral("c")}));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
    // Scaled up, in the share's own direction: the norm bound leaves it out — not struck, since an honest node
    // fed inputs near the bounds by a framer sends a share that large too (its gradients are).
    std::unique_ptr<Run> scaled = makeRun(3);
    std::vector<float> large = m_share;
    for (float& x : large)
        x *= 9.0f;
    QVERIFY(begin(*scaled, QStringLiteral("a"), large));
    answer(*scaled, QStringLiteral("b"));
    answer(*scaled, QStringLiteral("c"));
    QVERIFY(!scaled->verdicts.back().struck && !scaled->verdicts.back().passed);
    QVERIFY2(scaled->verdicts.back().reason.contains(u"not struck"), qPrintable(scaled->verdicts.back().reason));
    QCOMPARE(scaled->judged.back(), QStringList{QStringLiteral("a")});
}

void TestShareCheck::withTwoReplicasItIsLeftOutAndNobodyStruck() {
    std::unique_ptr<Run> run = makeRun(2);
    std::vector<float> reversed = m_share;
    for (float& v : reversed)
        v *= -9.0f;
    QVERIFY(begin(*run, QStringLiteral("a"), reversed));
    answer(*run, QStringLiteral("b"));
    const ShareVerdict& v = run->verdicts.back();
    QVERIFY(v.unsettled && !v.passed && !v.struck);
    QCOMPARE(v.disputed, (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
    QCOMPARE(run->check->struck(), qint64(0));
}

void TestShareCheck::aLyingVerifierCannotStrikeAnHonestShare() {
    std::unique_ptr<Run> run = makeRun(3);
    QVERIFY(begin(*run, QStringLiteral("a"), m_share));
    answer(*run, QStringLiteral("b"), -1); // b sketches the gradient negated: a frame-up
    answer(*run, QStringLiteral("c"));
    const ShareVerdict& v = run->verdicts.back();
    QVERIFY(v.passed && !v.struck);
    QCOMPARE(v.verifiers, (QStringList{QStringLiteral("b"), QStringLiteral("c")}));
    QVERIFY(run->judged.back().isEmpty()); // the share stands
    QCOMPARE(run->check->secondLooksPassed(), qint64(1));
}

void TestShareCheck::withTwoReplicasTheVerifierTakesASecondLook() {
    std::unique_ptr<Run> run = makeRun(2);
    std::vector<float> reversed = m_share;
    for (float& x : reversed)
        x *= -9.0f;
    // Two of a's microbatches kept (the same frames under two ids): the second look is at the other.
    Microbatch other = microbatch(*run, QStringLiteral("a"));
    other.id = 8;
    run->check->offer(QStringLiteral("a"), other, protocol::TaskKind::Backward);
    QVERIFY(begin(*run, QStringLiteral("a"), reversed));
    answer(*run, QStringLiteral("b"));
    QVERIFY(run->verdicts.empty());
    QCOMPARE(run->sent.size(), std::size_t(1)); // b again, at the other microbatch
    answer(*run, QStringLiteral("b"));
    const ShareVerdict& v = run->verdicts.back();
    QVERIFY(v.unsettled && !v.passed && !v.struck); // one verifier's word twice: left out, nobody struck
    QVERIFY2(v.reason.contains(u"microbatch 8") && v.reason.contains(u"microbatch 7"), qPrintable(v.reason));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
}

void TestShareCheck::aSilentVerifierIsReplacedThenTheShareStands() {
    std::unique_ptr<Run> run = makeRun(3);
    QVERIFY(begin(*run, QStringLiteral("a"), m_share));
    run->now += 60'000;
    run->router->tick(); // b missed its deadline: c is asked
    QVERIFY(std::any_of(run->sent.begin(), run->sent.end(), [](const Sent& s) { return s.node == u"c"; }));
    run->now += 60'000;
    run->router->tick(); // and c too: nobody is left to check it
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    QVERIFY(run->verdicts[0].passed && run->verdicts[0].verifiers.isEmpty());
    QCOMPARE(run->check->unchecked(), qint64(1));
    QVERIFY(run->judged.back().isEmpty());
}

void TestShareCheck::aSuspectsStageIsCheckedAtEveryStep() {
    std::unique_ptr<Run> run = makeRun(2, 25);
    run->draw = 0.9; // not drawn
    QVERIFY(!begin(*run, QStringLiteral("a"), m_share, 5));
    QVERIFY(run->sent.empty());
    run->draw = 0.1; // drawn
    std::vector<float> reversed = m_share;
    for (float& v : reversed)
        v *= -9.0f;
    QVERIFY(begin(*run, QStringLiteral("a"), reversed, 6));
    answer(*run, QStringLiteral("b"));
    run->draw = 0.9; // not drawn, but a is a suspect now
    QVERIFY(begin(*run, QStringLiteral("a"), m_share, 7));
    QCOMPARE(run->sent.size(), std::size_t(1));
}

void TestShareCheck::aReplicaVerifiesOnlyOnceItsWeightsWereShown() {
    // Where replicas show their weights after each step (WeightCheck's fingerprints), a replica just
    // synced holds what the sync sent, unproven: it sketches nobody's microbatch until its fingerprint
    // agreed. Tried: b and c joined and took a step, c's fingerprint agreed, b's not yet.
    std::unique_ptr<Run> run = makeRun(3);
    run->router->setVerifiersShowWeights(true);
    QVERIFY(!begin(*run, QStringLiteral("a"), m_share, 5)); // nobody has shown its weights: unchecked
    QVERIFY(run->sent.empty());
    QCOMPARE(run->check->unchecked(), qint64(1));
    run->router->weightsShown(QStringLiteral("c"));
    QVERIFY(begin(*run, QStringLiteral("a"), m_share, 6));
    QCOMPARE(run->sent.size(), std::size_t(1));
    QCOMPARE(run->sent[0].node, QStringLiteral("c")); // not b, though of another network
    // Joined again (a resync): unproven again.
    run->router->removeNode(QStringLiteral("c"), QStringLiteral("its weights missed a step"));
    run->router->addNode(QStringLiteral("c"), 1);
    run->router->stepSent();
    run->sent.clear();
    QVERIFY(!begin(*run, QStringLiteral("a"), m_share, 7));
    QVERIFY(run->sent.empty());
}

void TestShareCheck::withTraces(Run& run, const std::vector<float>* held) {
    // The checkpoint: the engines the trip ran on (nothing stepped them).
    Result<std::unique_ptr<Bisection>> bi =
        Bisection::create(m_config, 0.05, *run.router, [this](int stage, qint64 offset, qint64 count) {
            return m_engines[std::size_t(stage)]->weightsRange(offset, count);
        });
    QVERIFY(bi);
    run.bisection = std::move(*bi);
    Run* r = &run;
    connect(run.bisection.get(), &Bisection::judged,
            [r](const ReexecutionVerdict& v) { r->traceVerdicts.push_back(v); });
    Bisection* bisection = run.bisection.get();
    run.check->setTraceLooks(
        [bisection](int stage) { return bisection->drawShareSegment(stage); },
        [bisection](const CheckTask& task, qint64 era, const QString& node, const protocol::HeldFrame& output,
                    std::optional<double> loss, const ShareSegment& segment,
                    std::shared_ptr<const std::vector<float>> values, int microbatches,
                    std::function<void(const ShareLook&)> done) {
            return bisection->traceShare(task, era, node, output, loss, segment, std::move(values),
                                         microbatches, std::move(done));
        },
        [held](qint64, int, const QString&) { return held; });
}

void TestShareCheck::answerTrace(Run& run, const QString& node, float scale) {
    const auto it = std::find_if(run.sent.begin(), run.sent.end(),
                                 [&](const Sent& s) { return s.node == node && s.trace; });
    QVERIFY2(it != run.sent.end(), qPrintable(QStringLiteral("no trace was asked of %1").arg(node)));
    const Sent s = *it;
    run.sent.erase(it);
    gpu::StageEngine& engine = *m_engines[1];
    Result<std::vector<float>> trace = engine.traceBackward(span(m_trip.grad2), span(m_trip.act0), {});
    QVERIFY(trace);
    const std::size_t size = std::size_t(kBatch * kSeq * m_config.dModel);
    const int blocks = engine.blocks();
    for (std::size_t i = size * std::size_t(blocks + 1); i < size * std::size_t(2 * blocks + 1); ++i)
        (*trace)[i] *= scale;
    answerValues(run, node, s.taskId, *trace);
}

std::vector<float> TestShareCheck::reversedShare() const {
    std::vector<float> reversed = m_share;
    for (float& x : reversed)
        x *= -9.0f;
    return reversed;
}

void TestShareCheck::offerAnother(Run& run) {
    Microbatch other = microbatch(run, QStringLiteral("a"));
    other.id = 8;
    run.check->offer(QStringLiteral("a"), other, protocol::TaskKind::Backward,
                     protocol::holdPayload(m_trip.grad1, protocol::TaskFrameType::BackwardOutput));
}

void TestShareCheck::aLoneReplicasHonestShareHoldsItsOwnTrace() {
    // Every segment with weights drawn in turn (blocks, and none else on a middle stage): the honest share's
    // values there are the very gradient the coordinator recomputes from the trace's rows.
    for (int i = 0; i < 6; ++i) {
        std::unique_ptr<Run> run = makeRun(1);
        withTraces(*run);
        QVERIFY(begin(*run, QStringLiteral("a"), m_share));
        QCOMPARE(run->sent.size(), std::size_t(1));
        QVERIFY(run->sent[0].trace && run->sent[0].sketchSeed == 0); // its trace, not a sketch
        answerTrace(*run, QStringLiteral("a"));
        QCOMPARE(run->verdicts.size(), std::size_t(1));
        const ShareVerdict& v = run->verdicts[0];
        QVERIFY2(v.passed && !v.struck && !v.unsettled, qPrintable(v.reason));
        QVERIFY2(std::abs(v.alignment - 1) < 1e-3 && std::abs(v.normRatio - 1) < 1e-3,
                 qPrintable(QStringLiteral("%1 %2").arg(v.alignment).arg(v.normRatio)));
        QCOMPARE(v.verifiers, QStringList{QStringLiteral("a")}); // its own trace
        QCOMPARE(run->check->traceLooks(), qint64(1));
        QVERIFY(run->judged.back().isEmpty());
        QCOMPARE(run->traceVerdicts.back().verified, QStringList{QStringLiteral("a")}); // the trace held
    }
}

void TestShareCheck::aLoneReplicasReversedShareIsLeftOutThenStruck() {
    const std::vector<float> reversed = reversedShare();
    // One microbatch kept: one look, left out, not struck (one look can fail an honest share by chance).
    std::unique_ptr<Run> run = makeRun(1);
    withTraces(*run);
    QVERIFY(begin(*run, QStringLiteral("a"), reversed));
    answerTrace(*run, QStringLiteral("a"));
    ShareVerdict v = run->verdicts.back();
    QVERIFY2(v.unsettled && !v.passed && !v.struck, qPrintable(v.reason));
    QVERIFY2(std::abs(v.alignment + 9) < 1e-2, qPrintable(QString::number(v.alignment)));
    QVERIFY2(v.reason.contains(u"from its trace"), qPrintable(v.reason));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
    // Two kept: the second look at the other microbatch fails too — the coordinator's own recompute from two
    // traces the node gave: struck.
    run = makeRun(1);
    withTraces(*run);
    offerAnother(*run);
    QVERIFY(begin(*run, QStringLiteral("a"), reversed));
    answerTrace(*run, QStringLiteral("a"));
    QVERIFY(run->verdicts.empty());
    answerTrace(*run, QStringLiteral("a"));
    v = run->verdicts.back();
    QVERIFY2(v.struck && !v.passed, qPrintable(v.reason));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
    QCOMPARE(run->check->struck(), qint64(1));
}

void TestShareCheck::aTraceScaledToFitAReversedShareIsConvicted() {
    // A planning liar: its gradient rows below the top × −9 so that every block's weights' gradient fits its
    // share. The top row must be the gradient it was given, and the bottom its answer's: the trace parts
    // from its own answer (pinned at every look) and the liar is convicted, its share left out.
    const std::vector<float> reversed = reversedShare();
    std::unique_ptr<Run> run = makeRun(1);
    withTraces(*run);
    QVERIFY(begin(*run, QStringLiteral("a"), reversed));
    answerTrace(*run, QStringLiteral("a"), -9.0f);
    QCOMPARE(run->traceVerdicts.back().convicted, QStringList{QStringLiteral("a")});
    const ShareVerdict& v = run->verdicts.back();
    QVERIFY2(!v.passed && v.reason.contains(u"did not hold"), qPrintable(v.reason));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
}

void TestShareCheck::withTwoReplicasTheCoordinatorRefereesByTrace() {
    // b sketches a's microbatch negated (a frame-up): its only look fails a's honest share; the coordinator's
    // recompute from a's own trace passes it — it stands, and b goes on probation.
    std::unique_ptr<Run> run = makeRun(2);
    withTraces(*run, &m_share);
    QVERIFY(begin(*run, QStringLiteral("a"), m_share));
    answer(*run, QStringLiteral("b"), -1);
    QVERIFY(run->verdicts.empty());
    answerTrace(*run, QStringLiteral("a"));
    ShareVerdict v = run->verdicts.back();
    QVERIFY2(v.passed && !v.unsettled && !v.struck, qPrintable(v.reason));
    QCOMPARE(v.contradicted, QStringList{QStringLiteral("b")});
    QVERIFY(run->judged.back().isEmpty());
    // a's share reversed, b honest, two of a's microbatches: both of b's looks fail it, then both of the
    // coordinator's from a's traces — the coordinator's own word: struck (before, nobody was).
    const std::vector<float> reversed = reversedShare();
    run = makeRun(2);
    withTraces(*run, &reversed);
    offerAnother(*run);
    QVERIFY(begin(*run, QStringLiteral("a"), reversed));
    answer(*run, QStringLiteral("b"));
    answer(*run, QStringLiteral("b"));
    QVERIFY(run->verdicts.empty());
    answerTrace(*run, QStringLiteral("a"));
    answerTrace(*run, QStringLiteral("a"));
    v = run->verdicts.back();
    QVERIFY2(v.struck && !v.passed && v.contradicted.isEmpty(), qPrintable(v.reason));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
}

void TestShareCheck::aShareHoldingRefusedWorkIsLeftOutNotStruck() {
    // Its sender divided by 2, the coordinator accepted 1 of them (a result refused: on a framer's input, an
    // honest node's gradient of it is huge and in its share). The check's looks fail as a reversed share's do,
    // and it is left out — not struck: an upstream framer must not strike honest nodes through their shares.
    const std::vector<float> reversed = reversedShare();
    std::unique_ptr<Run> run = makeRun(1);
    withTraces(*run);
    offerAnother(*run);
    Microbatch mb = microbatch(*run, QStringLiteral("a"));
    run->check->offer(QStringLiteral("a"), mb, protocol::TaskKind::Backward,
                      protocol::holdPayload(m_trip.grad1, protocol::TaskFrameType::BackwardOutput));
    QVERIFY(run->check->begin(5, 1, {ShareView{QStringLiteral("a"), &reversed, 1, 2}}));
    answerTrace(*run, QStringLiteral("a"));
    answerTrace(*run, QStringLiteral("a"));
    const ShareVerdict& v = run->verdicts.back();
    QVERIFY2(v.unsettled && !v.struck && !v.passed, qPrintable(v.reason));
    QVERIFY2(v.reason.contains(u"refused"), qPrintable(v.reason));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
    QCOMPARE(run->check->struck(), qint64(0));
}

bool TestShareCheck::beginFirst(Run& run, const std::vector<float>& values, const QList<qint64>& ids) {
    for (const qint64 id : ids) {
        Microbatch mb = microbatch(run, QStringLiteral("s0"));
        mb.id = id;
        mb.stage = 0;
        mb.gradient = protocol::holdPayload(m_trip.grad1, protocol::TaskFrameType::BackwardInput);
        mb.taskEra = run.router->era(0);
        run.check->offer(QStringLiteral("s0"), mb, protocol::TaskKind::Backward, {}); // no tensor answered
    }
    return run.check->begin(5, 0, {ShareView{QStringLiteral("s0"), &values, 1}});
}

void TestShareCheck::aLoneFirstStagesShareIsLookedAtByItsTrace() {
    const auto answerFirstTrace = [&](Run& run) {
        const auto it = std::find_if(run.sent.begin(), run.sent.end(),
                                     [&](const Sent& s) { return s.node == u"s0" && s.trace; });
        QVERIFY2(it != run.sent.end(), "no trace was asked of the first stage's node");
        const qint64 taskId = it->taskId;
        run.sent.erase(it);
        Result<std::vector<float>> trace = m_engines[0]->traceBackward(span(m_trip.grad1), span(m_trip.tokens), {});
        QVERIFY2(trace, trace ? "" : trace.message().c_str());
        answerValues(run, QStringLiteral("s0"), taskId, *trace);
    };
    // Honest: every block drawn in turn (block 0 with the embedding) holds it.
    for (int i = 0; i < 4; ++i) {
        std::unique_ptr<Run> run = makeRun(1);
        withTraces(*run);
        QVERIFY(beginFirst(*run, m_firstShare, {7}));
        answerFirstTrace(*run);
        QCOMPARE(run->verdicts.size(), std::size_t(1));
        const ShareVerdict& v = run->verdicts[0];
        QVERIFY2(v.passed && !v.struck && !v.unsettled, qPrintable(v.reason));
        QVERIFY2(std::abs(v.alignment - 1) < 1e-3 && std::abs(v.normRatio - 1) < 1e-3,
                 qPrintable(QStringLiteral("%1 %2").arg(v.alignment).arg(v.normRatio)));
        QCOMPARE(run->traceVerdicts.back().verified, QStringList{QStringLiteral("s0")});
    }
    // Reversed (−9×), two microbatches kept: both looks fail, the coordinator's own recompute: struck.
    std::vector<float> reversed = m_firstShare;
    for (float& v : reversed)
        v *= -9.0f;
    std::unique_ptr<Run> run = makeRun(1);
    withTraces(*run);
    QVERIFY(beginFirst(*run, reversed, {7, 8}));
    answerFirstTrace(*run);
    QVERIFY(run->verdicts.empty());
    answerFirstTrace(*run);
    const ShareVerdict& v = run->verdicts.back();
    QVERIFY2(v.struck && !v.passed, qPrintable(v.reason));
    QCOMPARE(run->judged.back(), QStringList{QStringLiteral("s0")});
}

void TestShareCheck::aShareWhoseWorkPassedThroughALiarIsLeftOutNotStruck() {
    std::vector<float> reversed = m_share; // fails both looks as a lie would
    for (float& v : reversed)
        v *= -9.0f;
    for (const bool liarOnItsRoute : {true, false}) {
        std::unique_ptr<Run> run = makeRun(3);
        run->check->setDistrusted([](const QString& node) { return node == u"s0"; }); // s0 was convicted
        Microbatch mb = microbatch(*run, QStringLiteral("a"));
        mb.forwardNode = {liarOnItsRoute ? QStringLiteral("s0") : QStringLiteral("t0"), QStringLiteral("a"),
                          QStringLiteral("s2")};
        run->check->offer(QStringLiteral("a"), mb, protocol::TaskKind::Backward,
                          protocol::holdPayload(m_trip.grad1, protocol::TaskFrameType::BackwardOutput));
        QVERIFY(run->check->begin(5, 1, {ShareView{QStringLiteral("a"), &reversed, 1}}));
        answer(*run, QStringLiteral("b"));
        answer(*run, QStringLiteral("c"));
        const ShareVerdict& v = run->verdicts.back();
        QVERIFY2(!v.passed, qPrintable(v.reason)); // left out either way
        QCOMPARE(run->judged.back(), QStringList{QStringLiteral("a")});
        if (liarOnItsRoute) {
            QVERIFY2(!v.struck && v.unsettled && v.reason.contains(u"passed through s0"), qPrintable(v.reason));
        } else {
            QVERIFY2(v.struck, qPrintable(v.reason)); // t0, s2: nobody found lying on its route
        }
    }
}

QTEST_GUILESS_MAIN(TestShareCheck)
#include "test_share_check.moc"
