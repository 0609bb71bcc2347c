// SPDX-License-Identifier: Apache-2.0
// RobustCombine: no single replica sets the average. With three or more shares, one share sent
// as R·target − (R−1)·own (what sets a plain mean anywhere) moves the result by no more than an
// honest share would and names its sender; a NaN share or one far beyond any training is dropped
// (it no longer stalls the round); with two honest shares the result is their plain mean.
#include "coordinator/trust/RobustCombine.h"

#include <QTest>

#include <cmath>
#include <random>

using namespace tessera::coordinator;

namespace {

constexpr std::size_t kSize = 1000;

std::vector<float> around(const std::vector<float>& base, double spread, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> noise(0.0f, float(spread));
    std::vector<float> v = base;
    for (float& x : v)
        x += noise(rng);
    return v;
}

double distance(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    return std::sqrt(s);
}

} // namespace

class TestRobustCombine final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void twoHonestSharesGiveTheirMean();
    void onePoisonedShareOfThreeIsOutvotedAndNamed();
    void aNanShareIsDroppedAndTheRoundStillCloses();
    void aShareFarBeyondTrainingIsDroppedEvenAmongTwo();
};

void TestRobustCombine::twoHonestSharesGiveTheirMean() {
    const std::vector<float> checkpoint = around(std::vector<float>(kSize, 0.0f), 0.02, 1);
    const std::vector<Share> shares{{QStringLiteral("a"), around(checkpoint, 0.002, 2)},
                                    {QStringLiteral("b"), around(checkpoint, 0.002, 3)}};
    const Combined c = robustCombine(shares, checkpoint);
    QCOMPARE(c.used, 2);
    QVERIFY(c.dropped.isEmpty() && c.outliers.isEmpty());
    for (std::size_t i = 0; i < kSize; ++i)
        QVERIFY(std::abs(c.values[i] - (shares[0].values[i] + shares[1].values[i]) / 2) < 1e-6f);
}

void TestRobustCombine::onePoisonedShareOfThreeIsOutvotedAndNamed() {
    const std::vector<float> checkpoint = around(std::vector<float>(kSize, 0.0f), 0.02, 1);
    std::vector<Share> shares{{QStringLiteral("a"), around(checkpoint, 0.002, 2)},
                              {QStringLiteral("b"), around(checkpoint, 0.002, 3)},
                              {QStringLiteral("c"), around(checkpoint, 0.002, 4)}};
    std::vector<float> honestMean(kSize);
    for (std::size_t i = 0; i < kSize; ++i)
        honestMean[i] = (shares[0].values[i] + shares[1].values[i] + shares[2].values[i]) / 3;
    // The plain-mean attack: replica c sends 3·target − 2·(the others) to set every value to 0.03
    // — far, but of a plausible size, so it is not simply dropped.
    for (std::size_t i = 0; i < kSize; ++i)
        shares[2].values[i] = 3 * 0.03f - shares[0].values[i] - shares[1].values[i];
    const Combined c = robustCombine(shares, checkpoint);
    QCOMPARE(c.used, 3);
    QCOMPARE(c.outliers, QStringList{QStringLiteral("c")});
    std::vector<float> target(kSize, 0.03f);
    // The result stays with the honest replicas, nowhere near the attacker's target.
    QVERIFY(distance(c.values, honestMean) < 0.1 * distance(target, honestMean));
}

void TestRobustCombine::aNanShareIsDroppedAndTheRoundStillCloses() {
    const std::vector<float> checkpoint(kSize, 0.5f);
    std::vector<Share> shares{{QStringLiteral("a"), around(checkpoint, 0.01, 2)},
                              {QStringLiteral("b"), around(checkpoint, 0.01, 3)},
                              {QStringLiteral("nan"), around(checkpoint, 0.01, 4)}};
    shares[2].values[17] = std::nanf("");
    const Combined c = robustCombine(shares, checkpoint);
    QCOMPARE(c.dropped, QStringList{QStringLiteral("nan")});
    QCOMPARE(c.used, 2);
    for (float v : c.values)
        QVERIFY(std::isfinite(v));
}

void TestRobustCombine::aShareFarBeyondTrainingIsDroppedEvenAmongTwo() {
    // Honest weights far from the checkpoint (Adam moved each by ~lr per step for hundreds of
    // steps) are kept: only a size no training reaches is dropped.
    const std::vector<float> start = around(std::vector<float>(kSize, 0.0f), 0.02, 1);
    const std::vector<Share> trained{{QStringLiteral("a"), around(start, 0.3, 5)},
                                     {QStringLiteral("b"), around(start, 0.3, 6)}};
    QVERIFY(robustCombine(trained, start).dropped.isEmpty());
    const std::vector<float> checkpoint = around(std::vector<float>(kSize, 0.0f), 0.02, 1);
    std::vector<Share> shares{{QStringLiteral("honest"), around(checkpoint, 0.002, 2)},
                              {QStringLiteral("poison"), {}}};
    for (float w : shares[0].values)
        shares[1].values.push_back(10.0f - w); // sets a plain mean of two to 5
    const Combined c = robustCombine(shares, checkpoint);
    QCOMPARE(c.dropped, QStringList{QStringLiteral("poison")});
    QCOMPARE(c.values, shares[0].values);
}

QTEST_GUILESS_MAIN(TestRobustCombine)
#include "test_robust_combine.moc"
