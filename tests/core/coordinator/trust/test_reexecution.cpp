// SPDX-License-Identifier: Apache-2.0
// Reexecution on real tensors of the tiny model (3 stages, CPU) through a real Router whose nodes the
// test answers: a drawn result goes, as an ordinary task with its input, to another replica of the
// stage; honest answers agree and verify both nodes; a lie (noise, scaled, two tokens edited, a lied
// loss) disagrees, a third replica referees, and the liar is convicted — whether it is the checked
// node or the verifier; with two replicas nobody is convicted (unsettled); weights that moved since
// the task (a step) or a replica that joined since are not used; a verifier that misses its deadline
// is replaced, and with none left the case is dropped unjudged.
#include "TrustFrames.h"
#include "coordinator/router/Router.h"
#include "coordinator/trust/Reexecution.h"
#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"
#include "protocol/TaskMessage.h"

#include <QSignalSpy>

using namespace tessera;
using namespace tessera::coordinator;
using namespace tessera::test;

namespace {

struct Sent {
    QString node;
    qint64 taskId = 0;
    QString kind;
    QList<protocol::TaskFrameType> frames;
    qint64 microbatch = -1;
};

protocol::HeldFrame held(const QByteArray& payload, protocol::TaskFrameType type) {
    return protocol::holdPayload(payload, type);
}

} // namespace

class TestReexecution final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void honestReplicasAgreeAndAreVerified();
    void aLiarIsConvictedByTheReferee_data();
    void aLiarIsConvictedByTheReferee();
    void aLyingVerifierIsConvictedNotTheNodeItChecked();
    void twoReplicasCannotConvict();
    void onlyReplicasHoldingTheSameWeightsVerify();
    void aSilentVerifierIsReplacedThenTheCaseDropped();
    void twoEditedTokensFailWhereTheWholeFrameWouldPass();

private:
    // A router of three stages with `replicas` nodes on stage 1 ("a", "b", "c", …) and one on each
    // other stage, then a step (the era the tasks run in: every replica held the weights before it).
    struct Run {
        std::unique_ptr<Router> router;
        std::unique_ptr<Reexecution> reexecution;
        std::vector<Sent> sent;
        std::vector<ReexecutionVerdict> verdicts;
        qint64 now = 1'000'000;
    };
    std::unique_ptr<Run> makeRun(int replicas);
    // The microbatch as the router holds it when node `node`'s result of stage `stage` comes.
    Microbatch microbatch(const Run& run, int stage, protocol::TaskKind kind, const QString& node) const;
    // Answers the check task sent to `node` with `output` (a forward's activation or a backward's gradient).
    void answer(Run& run, const QString& node, const QByteArray& output, std::optional<double> loss = {});
    bool sentTo(const Run& run, const QString& node) const;

    gpu::ModelConfig m_config = tinyThreeStages();
    std::vector<std::unique_ptr<gpu::StageEngine>> m_engines;
    Trip m_trip;
};

void TestReexecution::initTestCase() {
    m_trip = trip(m_config, m_engines, 0);
}

std::unique_ptr<TestReexecution::Run> TestReexecution::makeRun(int replicas) {
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
            Sent s{node, d->header.value(u"task_id").toInteger(), d->header.value(u"kind").toString(), {},
                   d->header.value(u"microbatch").toInteger()};
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
    Result<std::unique_ptr<Reexecution>> re = Reexecution::create(
        m_config, ReexecutionSettings{}, *run->router, [r] { return r->now; },
        [](const QString& node) { return node == u"b" ? QStringLiteral("net-b") : QStringLiteral("net-a"); });
    if (!re)
        qFatal("reexecution: %s", re.message().c_str());
    run->reexecution = std::move(*re);
    connect(run->reexecution.get(), &Reexecution::judged,
            [r](const ReexecutionVerdict& v) { r->verdicts.push_back(v); });
    return run;
}

Microbatch TestReexecution::microbatch(const Run& run, int stage, protocol::TaskKind kind,
                                       const QString& node) const {
    using protocol::TaskFrameType;
    Microbatch mb;
    mb.id = 7;
    mb.batch = kBatch;
    mb.seq = kSeq;
    mb.tokens = kBatch * kSeq;
    mb.stage = stage;
    mb.inputs = {held(m_trip.tokens, TaskFrameType::ForwardInput), held(m_trip.act0, TaskFrameType::ForwardInput),
                 held(m_trip.act1, TaskFrameType::ForwardInput)};
    mb.targets = held(m_trip.targets, TaskFrameType::Targets);
    if (kind == protocol::TaskKind::Backward)
        mb.gradient = held(m_trip.grad2, TaskFrameType::BackwardInput);
    mb.taskNode = node;
    mb.taskEra = run.router->era(stage);
    return mb;
}

void TestReexecution::answer(Run& run, const QString& node, const QByteArray& output,
                             std::optional<double> loss) {
    const auto it = std::find_if(run.sent.begin(), run.sent.end(), [&](const Sent& s) { return s.node == node; });
    QVERIFY2(it != run.sent.end(), qPrintable(QStringLiteral("no task was sent to %1").arg(node)));
    const Sent s = *it;
    run.sent.erase(it);
    protocol::TaskResult result;
    result.taskId = s.taskId;
    result.kind = s.kind == u"forward"            ? protocol::TaskKind::Forward
                  : s.kind == u"forward_backward" ? protocol::TaskKind::ForwardBackward
                                                  : protocol::TaskKind::Backward;
    result.microbatch = s.microbatch;
    result.ok = true;
    result.loss = loss;
    const protocol::TaskFrameType type =
        s.kind == u"forward" ? protocol::TaskFrameType::ForwardOutput : protocol::TaskFrameType::BackwardOutput;
    const QByteArray bytes = protocol::TaskMessageBuilder(protocol::toJson(result), output.size())
                                 .add(type, QByteArrayView(output))
                                 .take();
    Result<protocol::TaskMessage> m = protocol::decodeTaskMessage(bytes);
    QVERIFY(m);
    run.router->onResult(node, result, *m);
}

bool TestReexecution::sentTo(const Run& run, const QString& node) const {
    return std::any_of(run.sent.begin(), run.sent.end(), [&](const Sent& s) { return s.node == node; });
}

void TestReexecution::honestReplicasAgreeAndAreVerified() {
    std::unique_ptr<Run> run = makeRun(2);
    const Microbatch mb = microbatch(*run, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    QVERIFY(run->reexecution->start(QStringLiteral("a"), mb, protocol::TaskKind::Forward,
                                    held(m_trip.act1, protocol::TaskFrameType::ForwardOutput), std::nullopt));
    // An ordinary forward task of the same microbatch, with its input, to the other replica.
    QCOMPARE(run->sent.size(), std::size_t(1));
    QCOMPARE(run->sent[0].node, u"b"_qs);
    QCOMPARE(run->sent[0].kind, u"forward"_qs);
    QCOMPARE(run->sent[0].microbatch, qint64(7));
    QCOMPARE(run->sent[0].frames, QList<protocol::TaskFrameType>{protocol::TaskFrameType::ForwardInput});
    answer(*run, QStringLiteral("b"), m_trip.act1);
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    const ReexecutionVerdict& v = run->verdicts[0];
    QCOMPARE(v.verified, (QStringList{u"a"_qs, u"b"_qs}));
    QVERIFY(v.convicted.isEmpty());
    QVERIFY(!v.unsettled);
    QCOMPARE(run->reexecution->agreed(), qint64(1));
    QCOMPARE(run->reexecution->pending(), 0);
}

void TestReexecution::aLiarIsConvictedByTheReferee_data() {
    QTest::addColumn<int>("stage");
    QTest::addColumn<QString>("mode");
    QTest::newRow("forward, noise") << 1 << u"noise"_qs;
    QTest::newRow("forward, scaled") << 1 << u"scale"_qs;
    QTest::newRow("backward, flipped") << 1 << u"flip"_qs;
    QTest::newRow("last stage, lied loss") << 2 << u"loss"_qs;
}

void TestReexecution::aLiarIsConvictedByTheReferee() {
    QFETCH(int, stage);
    QFETCH(QString, mode);
    // Stage 2 gets three replicas too for the last-stage row.
    std::unique_ptr<Run> run = makeRun(3);
    if (stage == 2) {
        run->router->addNode(QStringLiteral("t"), 2);
        run->router->addNode(QStringLiteral("u"), 2);
        run->router->stepSent();
    }
    const QString liar = stage == 2 ? u"s2"_qs : u"a"_qs;
    const bool lastStage = stage == 2;
    const bool backward = mode == u"flip";
    const protocol::TaskKind kind = lastStage  ? protocol::TaskKind::ForwardBackward
                                    : backward ? protocol::TaskKind::Backward
                                               : protocol::TaskKind::Forward;
    const QByteArray honest = lastStage ? m_trip.grad2 : backward ? m_trip.grad1 : m_trip.act1;
    const std::optional<double> honestLoss = lastStage ? std::optional<double>(m_trip.loss) : std::nullopt;
    const QByteArray lie = mode == u"loss" ? honest : test::lie(m_config, qPrintable(mode), honest, !backward && !lastStage);
    const std::optional<double> lostLoss = mode == u"loss" ? std::optional<double>(2.0) : honestLoss;
    const Microbatch mb = microbatch(*run, stage, kind, liar);
    QVERIFY(run->reexecution->start(liar, mb, kind,
                                    held(lie, lastStage || backward ? protocol::TaskFrameType::BackwardOutput
                                                                    : protocol::TaskFrameType::ForwardOutput),
                                    lostLoss));
    const QString verifier = run->sent.at(0).node;
    answer(*run, verifier, honest, honestLoss);
    QVERIFY(run->verdicts.empty()); // they disagree: a referee is asked
    QCOMPARE(run->sent.size(), std::size_t(1));
    const QString referee = run->sent.at(0).node;
    QVERIFY(referee != verifier && referee != liar);
    answer(*run, referee, honest, honestLoss);
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    const ReexecutionVerdict& v = run->verdicts[0];
    QCOMPARE(v.convicted, QStringList{liar});
    QCOMPARE(v.verified, (QStringList{verifier, referee}));
    QVERIFY2(v.reason.contains(u"differs from two replicas"), qPrintable(v.reason));
}

void TestReexecution::aLyingVerifierIsConvictedNotTheNodeItChecked() {
    std::unique_ptr<Run> run = makeRun(3);
    const Microbatch mb = microbatch(*run, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    QVERIFY(run->reexecution->start(QStringLiteral("a"), mb, protocol::TaskKind::Forward,
                                    held(m_trip.act1, protocol::TaskFrameType::ForwardOutput), std::nullopt));
    // Another network first: "b" is on net-b, "a" and "c" on net-a.
    QCOMPARE(run->sent.at(0).node, u"b"_qs);
    answer(*run, QStringLiteral("b"), lie(m_config, "noise", m_trip.act1, true));
    answer(*run, QStringLiteral("c"), m_trip.act1);
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    QCOMPARE(run->verdicts[0].convicted, QStringList{u"b"_qs});
    QCOMPARE(run->verdicts[0].verified, (QStringList{u"a"_qs, u"c"_qs}));
}

void TestReexecution::twoReplicasCannotConvict() {
    std::unique_ptr<Run> run = makeRun(2);
    const Microbatch mb = microbatch(*run, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    QVERIFY(run->reexecution->start(QStringLiteral("a"), mb, protocol::TaskKind::Forward,
                                    held(lie(m_config, "noise", m_trip.act1, true),
                                         protocol::TaskFrameType::ForwardOutput),
                                    std::nullopt));
    answer(*run, QStringLiteral("b"), m_trip.act1);
    // Who is right is one word against another: nobody is convicted, nobody verified.
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    QVERIFY(run->verdicts[0].unsettled);
    QVERIFY(run->verdicts[0].convicted.isEmpty());
    QVERIFY(run->verdicts[0].verified.isEmpty());
    QVERIFY2(run->verdicts[0].reason.contains(u"no third replica"), qPrintable(run->verdicts[0].reason));
    QCOMPARE(run->reexecution->unsettled(), qint64(1));
}

void TestReexecution::onlyReplicasHoldingTheSameWeightsVerify() {
    std::unique_ptr<Run> run = makeRun(2);
    const Microbatch mb = microbatch(*run, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    // A node that joined the stage in this era holds weights synced from somewhere else: not used.
    run->router->addNode(QStringLiteral("late"), 1);
    run->router->removeNode(QStringLiteral("b"), QStringLiteral("left"));
    QVERIFY(!run->reexecution->checkable(mb, protocol::TaskKind::Forward));
    // And once a step moved the stage's weights, nobody holds the ones the task ran on.
    std::unique_ptr<Run> other = makeRun(2);
    const Microbatch old = microbatch(*other, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    QVERIFY(other->reexecution->checkable(old, protocol::TaskKind::Forward));
    other->router->stepSent();
    QVERIFY(!other->reexecution->checkable(old, protocol::TaskKind::Forward));
    other->router->weightsChanged(QStringLiteral("a")); // an averaging result moves them too
    const Microbatch current = microbatch(*other, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    QVERIFY(other->reexecution->checkable(current, protocol::TaskKind::Forward));
    other->router->weightsChanged(QStringLiteral("b"));
    QVERIFY(!other->reexecution->checkable(current, protocol::TaskKind::Forward));
    // A stage 0 backward returns nothing to compare.
    QVERIFY(!other->reexecution->checkable(microbatch(*other, 0, protocol::TaskKind::Backward, u"s0"_qs),
                                           protocol::TaskKind::Backward));
}

void TestReexecution::aSilentVerifierIsReplacedThenTheCaseDropped() {
    std::unique_ptr<Run> run = makeRun(3);
    const Microbatch mb = microbatch(*run, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    QVERIFY(run->reexecution->start(QStringLiteral("a"), mb, protocol::TaskKind::Forward,
                                    held(m_trip.act1, protocol::TaskFrameType::ForwardOutput), std::nullopt));
    QVERIFY(sentTo(*run, u"b"_qs));
    run->now += 60'000; // past its deadline: banned a while, like any node missing one
    run->router->tick();
    QVERIFY(sentTo(*run, u"c"_qs));
    run->now += 60'000;
    run->router->tick();
    // Nobody left: dropped unjudged (the checked result stays unverified), nobody blamed for it.
    QVERIFY(run->verdicts.empty());
    QCOMPARE(run->reexecution->dropped(), qint64(1));
    QCOMPARE(run->reexecution->pending(), 0);
}

void TestReexecution::twoEditedTokensFailWhereTheWholeFrameWouldPass() {
    const QByteArray edited = lie(m_config, "tokens", m_trip.act1, true);
    // Over the frame as a whole the edit is within the audits' 5% …
    Result<std::unique_ptr<gpu::FrameDecoder>> decoder = gpu::FrameDecoder::create(m_config);
    QVERIFY(decoder);
    auto a = (*decoder)->activationForChecks(span(edited));
    auto b = (*decoder)->activationForChecks(span(m_trip.act1));
    QVERIFY(a && b);
    QVERIFY2(stats::relativeError(a->values, b->values) < 0.05,
             qPrintable(QString::number(stats::relativeError(a->values, b->values))));
    // … but token by token it is not: the referee convicts the editor.
    std::unique_ptr<Run> run = makeRun(3);
    const Microbatch mb = microbatch(*run, 1, protocol::TaskKind::Forward, QStringLiteral("a"));
    QVERIFY(run->reexecution->start(QStringLiteral("a"), mb, protocol::TaskKind::Forward,
                                    held(edited, protocol::TaskFrameType::ForwardOutput), std::nullopt));
    answer(*run, QStringLiteral("b"), m_trip.act1);
    answer(*run, QStringLiteral("c"), m_trip.act1);
    QCOMPARE(run->verdicts.size(), std::size_t(1));
    QCOMPARE(run->verdicts[0].convicted, QStringList{u"a"_qs});
}

QTEST_GUILESS_MAIN(TestReexecution)
#include "test_reexecution.moc"
