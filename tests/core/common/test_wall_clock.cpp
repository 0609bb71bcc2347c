// SPDX-License-Identifier: Apache-2.0
// WallClock: the coordinator's stored time goes on at the steady clock's rate when the system's
// wall clock steps back an hour, follows it forward, and starts no earlier than what was stored.
// (The whole coordinator and its nodes under a stepped clock: tests/integration/test_clock_step.)
#include "common/WallClock.h"

#include <QTest>

using namespace tessera;

namespace {
constexpr qint64 kHour = 3'600'000;
constexpr qint64 kT0 = 1'796'000'000'000; // Dec 2026
} // namespace

class TestWallClock final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void followsTheSystemClock() {
        WallClock c;
        QCOMPARE(c.read(kT0, 10), kT0);
        QCOMPARE(c.read(kT0 + 250, 260), kT0 + 250);
        // Slewed a little slower than the steady clock: the wall is followed where it is later only.
        QCOMPARE(c.read(kT0 + 400, 460), kT0 + 450);
    }

    void aStepBackIsNotFollowed() {
        WallClock c;
        QCOMPARE(c.read(kT0, 0), kT0);
        // The system clock steps back an hour one second later: time goes on by the steady clock.
        QCOMPARE(c.read(kT0 + 1000 - kHour, 1000), kT0 + 1000);
        QCOMPARE(c.read(kT0 + 6000 - kHour, 6000), kT0 + 6000);
        // Durations measured on it stay true: 5 s of heartbeat silence is 5 s, not 5 s − 1 h.
        const qint64 a = c.read(kT0 + 7000 - kHour, 7000);
        const qint64 b = c.read(kT0 + 12'000 - kHour, 12'000);
        QCOMPARE(b - a, qint64(5000));
    }

    void aStepForwardIsFollowed() {
        WallClock c;
        QCOMPARE(c.read(kT0, 0), kT0);
        QCOMPARE(c.read(kT0 + kHour + 1000, 1000), kT0 + kHour + 1000);
        QCOMPARE(c.read(kT0 + kHour + 2000, 2000), kT0 + kHour + 2000);
    }

    void startsNoEarlierThanWhatWasStored() {
        // A restart after the clock stepped back: the stored times are an hour ahead of the system.
        WallClock c;
        c.floor(kT0);
        QCOMPARE(c.read(kT0 - kHour, 0), kT0);
        QCOMPARE(c.read(kT0 - kHour + 3000, 3000), kT0 + 3000);
        // A floor below the clock changes nothing.
        c.floor(kT0 - 5 * kHour);
        QCOMPARE(c.read(kT0 - kHour + 4000, 4000), kT0 + 4000);
    }

    void theProcessClockNeverGoesBack() {
        qint64 last = 0;
        for (int i = 0; i < 10'000; ++i) {
            const qint64 t = WallClock::nowMs();
            QVERIFY(t >= last);
            last = t;
        }
        WallClock::holdAtLeast(last + kHour);
        QVERIFY(WallClock::nowMs() >= last + kHour);
    }
};

QTEST_APPLESS_MAIN(TestWallClock)
#include "test_wall_clock.moc"
