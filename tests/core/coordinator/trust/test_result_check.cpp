// SPDX-License-Identifier: Apache-2.0
// ResultCheck on real tensors of the tiny model (3 stages, CPU; with codec none and again with the
// subspace codec, whose frames the checks read as k + 1 coordinates a token): an honest activation or
// gradient is accepted; each malformed or implausible one is refused with its reason before it
// could be relayed — a truncated frame, another shape, another microbatch's token ids, NaN, all
// zeros, huge values, the task's own input sent back, a last stage's loss that is NaN or absurd.
// Noise of the honest size passes these checks: that is the audits' work (test_auditor).
// Past its warm-up, the per-stage statistics suspect what the hard checks let through (used, but
// audited): scaled activations, flipped gradients, noise of the honest size, a loss far from the
// stage's; 40 honest microbatches before and 7 after raise no suspicion. The picture is drawn from
// nodes that passed an audit: 40 microbatches of a newcomer's teach it nothing.
#include "TrustFrames.h"
#include "coordinator/trust/ResultCheck.h"

using namespace tessera;
using namespace tessera::coordinator;
using namespace tessera::test;

class TestResultCheck final : public QObject {
    Q_OBJECT

public:
    explicit TestResultCheck(gpu::ModelConfig config)
        : m_config(std::move(config)) {}

private Q_SLOTS:
    void initTestCase();
    void honestResultsAreAccepted();
    void malformedOrImplausibleResultsAreRefused_data();
    void malformedOrImplausibleResultsAreRefused();
    void noiseOfTheHonestSizePassesTheHardChecks();
    void auditRateFallsAfterProbationAndRisesAfterAStrike();
    void statisticalOutliersAreSuspectedAfterTheWarmup();

private:
    TaskEvidence forward1(const QByteArray& output) const;
    TaskEvidence backward1(const QByteArray& output) const;
    TaskEvidence last(const QByteArray& output, double loss) const;

    gpu::ModelConfig m_config;
    std::vector<std::unique_ptr<gpu::StageEngine>> m_engines;
    Trip m_trip, m_other;
    std::unique_ptr<ResultCheck> m_check;
};

void TestResultCheck::initTestCase() {
    m_trip = trip(m_config, m_engines, 0);
    m_other = trip(m_config, m_engines, 5);
    Result<std::unique_ptr<ResultCheck>> c = ResultCheck::create(m_config);
    QVERIFY2(c, c ? "" : c.message().c_str());
    m_check = std::move(*c);
}

TaskEvidence TestResultCheck::forward1(const QByteArray& output) const {
    return TaskEvidence{QStringLiteral("n1"),
                        1,
                        3,
                        protocol::TaskKind::Forward,
                        1,
                        kBatch,
                        kSeq,
                        span(m_trip.tokens),
                        span(m_trip.act0),
                        {},
                        {},
                        span(output),
                        std::nullopt};
}

TaskEvidence TestResultCheck::backward1(const QByteArray& output) const {
    return TaskEvidence{QStringLiteral("n1"),
                        1,
                        3,
                        protocol::TaskKind::Backward,
                        1,
                        kBatch,
                        kSeq,
                        span(m_trip.tokens),
                        span(m_trip.act0),
                        {},
                        span(m_trip.grad2),
                        span(output),
                        std::nullopt};
}

TaskEvidence TestResultCheck::last(const QByteArray& output, double loss) const {
    return TaskEvidence{QStringLiteral("n1"),
                        2,
                        3,
                        protocol::TaskKind::ForwardBackward,
                        1,
                        kBatch,
                        kSeq,
                        span(m_trip.tokens),
                        span(m_trip.act1),
                        span(m_trip.targets),
                        {},
                        span(output),
                        loss};
}

void TestResultCheck::honestResultsAreAccepted() {
    QCOMPARE(m_check->check(forward1(m_trip.act1)).refused, std::nullopt);
    QCOMPARE(m_check->check(backward1(m_trip.grad1)).refused, std::nullopt);
    QCOMPARE(m_check->check(last(m_trip.grad2, m_trip.loss)).refused, std::nullopt);
}

void TestResultCheck::malformedOrImplausibleResultsAreRefused_data() {
    QTest::addColumn<int>("which"); // 0: stage 1's forward, 1: its backward, 2: the last stage
    QTest::addColumn<QByteArray>("output");
    QTest::addColumn<double>("loss");
    QTest::addColumn<QString>("reason");
    const QByteArray act = m_trip.act1, grad = m_trip.grad1;
    QTest::newRow("truncated") << 0 << act.left(act.size() - 1) << 0.0 << u"does not decode"_qs;
    QTest::newRow("another microbatch's tokens") << 0 << m_other.act1 << 0.0 << u"token ids"_qs;
    // A subspace frame's NaN is in its int8 scales, which the codec refuses as it reads them; and its
    // activation is never all zeros (E[t] is there whatever the coefficients): the "zeros" lie is E[t]'s
    // part outside span(U) alone, a plausible size, which the statistics and audits are for.
    const bool subspace = m_config.codec == gpu::CodecKind::Subspace;
    QTest::newRow("NaN activation") << 0 << lie(m_config, "nan", act, true) << 0.0
                                    << (subspace ? u"NaN scale"_qs : u"not finite"_qs);
    if (!subspace)
        QTest::newRow("zero activation") << 0 << lie(m_config, "zeros", act, true) << 0.0 << u"all zeros"_qs;
    QTest::newRow("echoed activation") << 0 << m_trip.act0 << 0.0 << u"own input"_qs;
    QTest::newRow("zero gradient") << 1 << lie(m_config, "zeros", grad, false) << 0.0 << u"all zeros"_qs;
    QTest::newRow("echoed gradient") << 1 << m_trip.grad2 << 0.0 << u"own input"_qs;
    QTest::newRow("an activation for a gradient") << 1 << act << 0.0 << u"does not decode"_qs;
    QTest::newRow("NaN loss") << 2 << m_trip.grad2 << double(std::nan("")) << u"loss"_qs;
    QTest::newRow("absurd loss") << 2 << m_trip.grad2 << 1e6 << u"loss"_qs;
    QTest::newRow("negative loss") << 2 << m_trip.grad2 << -1.0 << u"loss"_qs;
}

void TestResultCheck::malformedOrImplausibleResultsAreRefused() {
    QFETCH(int, which);
    QFETCH(QByteArray, output);
    QFETCH(double, loss);
    QFETCH(QString, reason);
    const TaskEvidence task = which == 0   ? forward1(output)
                              : which == 1 ? backward1(output)
                                           : last(output, loss);
    const std::optional<QString> refused = m_check->check(task).refused;
    QVERIFY2(refused, "accepted");
    QVERIFY2(refused->contains(reason), qPrintable(*refused));
}

void TestResultCheck::noiseOfTheHonestSizePassesTheHardChecks() {
    QCOMPARE(m_check->check(forward1(lie(m_config, "noise", m_trip.act1, true))).refused, std::nullopt);
}

void TestResultCheck::auditRateFallsAfterProbationAndRisesAfterAStrike() {
    double draw = 0.1; // between the trusted (3%) and the probation (25%) rates
    m_check->setRandom([&draw] { return draw; });
    const QString node = QStringLiteral("n1");
    QVERIFY(m_check->sampled(node));
    QVERIFY(!m_check->trusted(node));
    for (int i = 0; i < m_check->settings().probationAudits; ++i)
        m_check->auditPassed(node);
    QVERIFY(m_check->trusted(node));
    QVERIFY(!m_check->sampled(node));
    m_check->probation(node);
    QVERIFY(m_check->sampled(node));
    QVERIFY(!m_check->trusted(node));
}

void TestResultCheck::statisticalOutliersAreSuspectedAfterTheWarmup() {
    Result<std::unique_ptr<ResultCheck>> created = ResultCheck::create(m_config);
    QVERIFY(created);
    ResultCheck& check = **created;
    // One microbatch's four results in pipeline order, as the router checks them; `lie` replaces
    // one of them. The stage 0 forward goes first: stage 1's change is measured against it.
    const auto run = [&](const QString& node, qint64 id, const Trip& t, const QByteArray* act1,
                         const QByteArray* grad1, double loss) -> std::optional<QString> {
        const TaskEvidence f0{node,
                              0,
                              3,
                              protocol::TaskKind::Forward,
                              id,
                              kBatch,
                              kSeq,
                              span(t.tokens),
                              span(t.tokens),
                              {},
                              {},
                              span(t.act0),
                              std::nullopt};
        const QByteArray& a1 = act1 ? *act1 : t.act1;
        const TaskEvidence f1{node,         1,      3,    protocol::TaskKind::Forward,
                              id,           kBatch, kSeq, span(t.tokens),
                              span(t.act0), {},     {},   span(a1),
                              std::nullopt};
        const TaskEvidence l{node,
                             2,
                             3,
                             protocol::TaskKind::ForwardBackward,
                             id,
                             kBatch,
                             kSeq,
                             span(t.tokens),
                             span(t.act1),
                             span(t.targets),
                             {},
                             span(t.grad2),
                             loss};
        const QByteArray& g1 = grad1 ? *grad1 : t.grad1;
        const TaskEvidence b1{node,
                              1,
                              3,
                              protocol::TaskKind::Backward,
                              id,
                              kBatch,
                              kSeq,
                              span(t.tokens),
                              span(t.act0),
                              {},
                              span(t.grad2),
                              span(g1),
                              std::nullopt};
        for (const TaskEvidence* task : {&f0, &f1, &l, &b1}) {
            const CheckVerdict v = check.check(*task);
            if (v.refused)
                return QStringLiteral("refused: ") + *v.refused;
            if (v.suspicious)
                return v.suspicious;
        }
        return std::nullopt;
    };
    // The statistics learn from vetted nodes (an audit passed) only: a newcomer's results, however
    // many, draw no picture to judge by.
    const QString honest = QStringLiteral("honest"), newcomer = QStringLiteral("newcomer");
    check.auditPassed(honest);
    std::vector<Trip> trips;
    for (int i = 0; i < 48; ++i)
        trips.push_back(trip(m_config, m_engines, 7 * i + 11));
    qint64 id = 100;
    for (int i = 0; i < 40; ++i)
        QCOMPARE(run(newcomer, ++id, trips[std::size_t(i)], nullptr, nullptr, trips[std::size_t(i)].loss),
                 std::nullopt);
    QVERIFY(!run(newcomer, ++id, trips[40], nullptr, nullptr, trips[40].loss - 2)); // no picture yet
    for (int i = 0; i < 40; ++i) {
        const std::optional<QString> suspected =
            run(honest, ++id, trips[std::size_t(i)], nullptr, nullptr, trips[std::size_t(i)].loss);
        QVERIFY2(!suspected, qPrintable(suspected.value_or(QString())));
    }
    const Trip& t = trips[40];
    struct Lie {
        const char* what;
        QByteArray act1, grad1;
        double loss;
        const char* metric;
    };
    const std::vector<Lie> lies{
        {"scaled activation", lie(m_config, "scale", t.act1, true), {}, t.loss, "activation_"},
        {"noise activation", lie(m_config, "noise", t.act1, true), {}, t.loss, "activation_change"},
        {"flipped gradient", {}, lie(m_config, "flip", t.grad1, false), t.loss, "gradient_cosine"},
        {"scaled gradient", {}, lie(m_config, "scale", t.grad1, false), t.loss, "gradient_rms"},
        {"a loss far from the stage's", {}, {}, t.loss - 2, "loss"},
    };
    for (const Lie& l : lies) {
        const std::optional<QString> suspected = run(newcomer, ++id, t, l.act1.isEmpty() ? nullptr : &l.act1,
                                                     l.grad1.isEmpty() ? nullptr : &l.grad1, l.loss);
        QVERIFY2(suspected, l.what);
        QVERIFY2(suspected->contains(QLatin1String(l.metric)),
                 qPrintable(QString::fromLatin1(l.what) + u": " + *suspected));
    }
    QCOMPARE(check.suspicious(), qint64(lies.size()));
    QCOMPARE(check.refused(), qint64(0));
    for (std::size_t i = 41; i < trips.size(); ++i) { // the lies did not move the picture of honest results
        const std::optional<QString> suspected = run(honest, ++id, trips[i], nullptr, nullptr, trips[i].loss);
        QVERIFY2(!suspected, qPrintable(suspected.value_or(QString())));
    }
}

// Every check twice: on the tiny model's full rows (codec none), and on a subspace model's frames,
// which the checks read as k + 1 coordinates a token (FrameDecoder::activationForChecks).
int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    gpu::ModelConfig subspace = tinyThreeStages();
    subspace.codec = gpu::CodecKind::Subspace;
    TestResultCheck none(tinyThreeStages());
    TestResultCheck inSubspace(subspace);
    return QTest::qExec(&none, argc, argv) | QTest::qExec(&inSubspace, argc, argv);
}
#include "test_result_check.moc"
