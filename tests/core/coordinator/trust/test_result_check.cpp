// ResultCheck on real tensors of the tiny model (3 stages, CPU): an honest activation or
// gradient is accepted; each malformed or implausible one is refused with its reason before it
// could be relayed — a truncated frame, another shape, another microbatch's token ids, NaN, all
// zeros, huge values, the task's own input sent back, a last stage's loss that is NaN or absurd.
// Noise of the honest size passes these checks: that is the audits' work (test_auditor).
#include "TrustFrames.h"
#include "coordinator/trust/ResultCheck.h"

using namespace tessera;
using namespace tessera::coordinator;
using namespace tessera::test;

class TestResultCheck final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void honestResultsAreAccepted();
    void malformedOrImplausibleResultsAreRefused_data();
    void malformedOrImplausibleResultsAreRefused();
    void noiseOfTheHonestSizePassesTheHardChecks();
    void auditRateFallsAfterProbationAndRisesAfterAStrike();

private:
    TaskEvidence forward1(const QByteArray& output) const;
    TaskEvidence backward1(const QByteArray& output) const;
    TaskEvidence last(const QByteArray& output, double loss) const;

    gpu::ModelConfig m_config = tinyThreeStages();
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
    return TaskEvidence{1,
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
    return TaskEvidence{1,
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
    return TaskEvidence{2,
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
    QCOMPARE(m_check->check(forward1(m_trip.act1)), std::nullopt);
    QCOMPARE(m_check->check(backward1(m_trip.grad1)), std::nullopt);
    QCOMPARE(m_check->check(last(m_trip.grad2, m_trip.loss)), std::nullopt);
}

void TestResultCheck::malformedOrImplausibleResultsAreRefused_data() {
    QTest::addColumn<int>("which"); // 0: stage 1's forward, 1: its backward, 2: the last stage
    QTest::addColumn<QByteArray>("output");
    QTest::addColumn<double>("loss");
    QTest::addColumn<QString>("reason");
    const QByteArray act = m_trip.act1, grad = m_trip.grad1;
    QTest::newRow("truncated") << 0 << act.left(act.size() - 1) << 0.0 << u"does not decode"_qs;
    QTest::newRow("another microbatch's tokens") << 0 << m_other.act1 << 0.0 << u"token ids"_qs;
    QTest::newRow("NaN activation") << 0 << lie(m_config, "nan", act, true) << 0.0 << u"not finite"_qs;
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
    const std::optional<QString> refused = m_check->check(task);
    QVERIFY2(refused, "accepted");
    QVERIFY2(refused->contains(reason), qPrintable(*refused));
}

void TestResultCheck::noiseOfTheHonestSizePassesTheHardChecks() {
    QCOMPARE(m_check->check(forward1(lie(m_config, "noise", m_trip.act1, true))), std::nullopt);
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

QTEST_GUILESS_MAIN(TestResultCheck)
#include "test_result_check.moc"
