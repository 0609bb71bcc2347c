// SPDX-License-Identifier: Apache-2.0
// StageMonitor: honest values that training moves are followed, not audited one by one; a value
// far from the recent ones is still an outlier.
//
// What is tried: a vetted node's gradient RMS that agrees within ±2% for 90 results and then falls
// 2.8× within one step (8 results) and stays there, as a last stage's did in bench_swarm's home-link
// runs (1.42e-5 → 5e-6). Against the whole window's median every result after the fall was an
// outlier (over a hundred audits in a 150-step run); against the recent values' median, only those
// of the step the fall happened in. Then a result at the old level, and one ten times lower, from a
// node whose values are not learned: both outliers.
#include "coordinator/trust/StageMonitor.h"

#include <QTest>

#include <cmath>

using namespace tessera::coordinator;

namespace {

using Metric = StageMonitor::Metric;

// ±2% around `level`, the same sequence every run.
double honest(double level, int i) {
    return level * (1.0 + 0.02 * std::sin(1.7 * i));
}

// 90 results at one level, then a fall to 5e-6 within 8 results and 120 more there: how many were
// outliers, and the last one's index after the fall began.
std::pair<int, int> fall(StageMonitor& monitor) {
    int i = 0;
    for (; i < 90; ++i)
        if (monitor.observe(1, {{Metric::GradientRms, honest(1.42e-5, i)}}, true))
            return {-1, -1};
    int outliers = 0, lastOutlier = -1;
    for (int j = 1; j <= 128; ++j, ++i) {
        const double level = j <= 8 ? 1.42e-5 * std::pow(5e-6 / 1.42e-5, j / 8.0) : 5e-6;
        if (monitor.observe(1, {{Metric::GradientRms, honest(level, i)}}, true)) {
            ++outliers;
            lastOutlier = j;
        }
    }
    return {outliers, lastOutlier};
}

} // namespace

class TestStageMonitor final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void nothingIsJudgedDuringTheWarmup();
    void aMoveTrainingMakesIsFollowed();
};

void TestStageMonitor::nothingIsJudgedDuringTheWarmup() {
    StageMonitor monitor(2);
    for (int i = 0; i < StageMonitorSettings{}.warmup; ++i)
        QVERIFY(!monitor.observe(1, {{Metric::GradientRms, honest(1e-5, i) * (i % 2 ? 10 : 1)}}, true));
    QVERIFY(monitor.observe(1, {{Metric::GradientRms, 1e-3}}, false));  // judged from now on
    QVERIFY(!monitor.observe(0, {{Metric::GradientRms, 1e-3}}, false)); // another stage's picture: none
    // outlier() asks the same without a message (the framing rule's question of an input): none while the
    // window warms up.
    QCOMPARE(monitor.outlier(1, {Metric::GradientRms, 1e-3}), std::optional<bool>(true));
    QCOMPARE(monitor.outlier(1, {Metric::GradientRms, 1e-5}), std::optional<bool>(false));
    QCOMPARE(monitor.outlier(0, {Metric::GradientRms, 1e-3}), std::optional<bool>());
}

void TestStageMonitor::aMoveTrainingMakesIsFollowed() {
    // Judged against the whole window's median (recent = window, as before): every result after the
    // fall is an outlier until the new level holds the window's middle (after 90 results here).
    StageMonitorSettings whole;
    whole.recent = whole.window;
    StageMonitor before(2, whole);
    const auto [beforeOutliers, beforeLast] = fall(before);
    QVERIFY2(beforeLast >= 80, qPrintable(QString::number(beforeLast)));
    QVERIFY2(beforeOutliers >= 80, qPrintable(QString::number(beforeOutliers)));

    StageMonitor monitor(2);
    const auto [outliers, lastOutlier] = fall(monitor);
    // Audited while the recent values' median crosses the fall (at most half of them), then never.
    QVERIFY2(outliers <= StageMonitorSettings{}.recent / 2 + 8, qPrintable(QString::number(outliers)));
    QVERIFY2(lastOutlier <= StageMonitorSettings{}.recent, qPrintable(QString::number(lastOutlier)));
    // The old level and a lie ten times lower are outliers now; neither is learned.
    const std::optional<QString> old = monitor.observe(1, {{Metric::GradientRms, 1.42e-5}}, false);
    QVERIFY(old);
    QVERIFY2(old->contains(QLatin1String("from the median of the last 32 (")), qPrintable(*old));
    QVERIFY(monitor.observe(1, {{Metric::GradientRms, 5e-7}}, false));
    QVERIFY(!monitor.observe(1, {{Metric::GradientRms, 5.1e-6}}, false));
}

QTEST_APPLESS_MAIN(TestStageMonitor)
#include "test_stage_monitor.moc"
