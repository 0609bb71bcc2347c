// SPDX-License-Identifier: Apache-2.0
// ComputeThrottle: the duty cycle between tasks is exact, idle time builds no credit, a new limit
// applies from the next task, and the measured share follows the window. Times are synthetic.
#include "node/engine/ComputeThrottle.h"

#include <QTest>

#include <chrono>
#include <cmath>

using namespace tessera::node;
using namespace std::chrono_literals;
using TimePoint = ComputeThrottle::TimePoint;
using std::chrono::nanoseconds;

namespace {

const TimePoint t0 = TimePoint() + 1000s;

double ms(nanoseconds d) {
    return double(d.count()) / 1e6;
}

} // namespace

class TestComputeThrottle : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void firstTaskStartsAtOnce() {
        ComputeThrottle t(0.3);
        QCOMPARE(t.restBefore(t0), 0ns);
        QCOMPARE(t.computeShare(t0), 0.0);
        QCOMPARE(t.totalComputeShare(t0), 0.0);
    }

    void limitThirtyPercentStartsEvery33ms() {
        ComputeThrottle t(0.3);
        TimePoint now = t0;
        TimePoint previousStart;
        for (int i = 0; i < 100; ++i) {
            now += t.restBefore(now); // a worker that starts as soon as it may
            QCOMPARE(t.restBefore(now), 0ns);
            if (i > 0)
                QVERIFY2(std::abs(ms(now - previousStart) - 100.0 / 3.0) < 1e-5,
                         qPrintable(QString::number(ms(now - previousStart))));
            previousStart = now;
            t.recordCompute(now, now + 10ms);
            now += 10ms;
        }
        // Measured from the first start to the end of the last rest: exactly the limit.
        now += t.restBefore(now);
        QVERIFY(std::abs(t.totalComputeShare(now) - 0.3) < 1e-6);
        QVERIFY(std::abs(t.computeShare(now) - 0.3) < 1e-6);
    }

    void restIsWaitedOffByIdleTime() {
        ComputeThrottle t(0.5);
        t.recordCompute(t0, t0 + 10ms);
        QCOMPARE(t.restBefore(t0 + 10ms), 10ms);
        QCOMPARE(t.restBefore(t0 + 14ms), 6ms);
        QCOMPARE(t.restBefore(t0 + 20ms), 0ns);
    }

    void idleBuildsNoCredit() {
        ComputeThrottle t(0.5);
        t.recordCompute(t0, t0 + 10ms);
        const TimePoint later = t0 + 10s; // a long idle: nothing queued, or paused
        QCOMPARE(t.restBefore(later), 0ns);
        t.recordCompute(later, later + 10ms);
        // The next task still rests its full share, however long the idle was.
        QCOMPARE(t.restBefore(later + 10ms), 10ms);
        t.recordCompute(later + 20ms, later + 30ms);
        QCOMPARE(t.restBefore(later + 30ms), 10ms);
    }

    void limitChangeAppliesFromTheNextTask() {
        ComputeThrottle t(0.5);
        t.recordCompute(t0, t0 + 10ms);
        QCOMPARE(t.restBefore(t0 + 10ms), 10ms);
        t.setLimit(0.25);
        QCOMPARE(t.restBefore(t0 + 10ms), 30ms);
        t.setLimit(1.0);
        QCOMPARE(t.restBefore(t0 + 10ms), 0ns);
    }

    void limitIsClamped() {
        ComputeThrottle t;
        QCOMPARE(t.limit(), 1.0);
        t.setLimit(0);
        QCOMPARE(t.limit(), ComputeThrottle::kMinLimit);
        t.setLimit(-3);
        QCOMPARE(t.limit(), ComputeThrottle::kMinLimit);
        t.setLimit(7);
        QCOMPARE(t.limit(), 1.0);
        t.setLimit(std::nan(""));
        QCOMPARE(t.limit(), 1.0);
    }

    void shareFollowsTheWindow() {
        ComputeThrottle t(1.0, 10s);
        TimePoint now = t0;
        for (int i = 0; i < 200; ++i) { // 20 s at 50%: 50 ms on, 50 ms off
            t.recordCompute(now, now + 50ms);
            now += 100ms;
        }
        QVERIFY(std::abs(t.computeShare(now) - 0.5) < 1e-6);
        QVERIFY(std::abs(t.totalComputeShare(now) - 0.5) < 1e-6);
        now += 5s; // idle: half the window is now empty
        QVERIFY(std::abs(t.computeShare(now) - 0.25) < 1e-6);
        QVERIFY(std::abs(t.totalComputeShare(now) - 0.4) < 1e-6);
        now += 20s;
        QCOMPARE(t.computeShare(now), 0.0);
    }

    void shareBeforeTheWindowFillsCountsOnlyTimeSinceTheFirstTask() {
        ComputeThrottle t(1.0, 30s);
        t.recordCompute(t0, t0 + 1s);
        QVERIFY(std::abs(t.computeShare(t0 + 2s) - 0.5) < 1e-9);
        // A task still running at `now` counts only up to now.
        t.recordCompute(t0 + 3s, t0 + 5s);
        QVERIFY(std::abs(t.computeShare(t0 + 4s) - 0.5) < 1e-9);
    }
};

QTEST_GUILESS_MAIN(TestComputeThrottle)
#include "test_compute_throttle.moc"
