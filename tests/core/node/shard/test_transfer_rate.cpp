// SPDX-License-Identifier: Apache-2.0
// TransferRate on synthetic times: the moving average, its fall when a transfer stalls, and the
// bandwidth cap holding a reader that always wants more to the cap.
#include "node/shard/TransferRate.h"

#include <QTest>

using tessera::node::TransferRate;

class TestTransferRate final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void averagesOverTheWindowAndFallsWhenStalled();
    void uncappedAllowsEverything();
    void capHoldsAGreedyReaderToTheCap();
};

void TestTransferRate::averagesOverTheWindowAndFallsWhenStalled() {
    TransferRate r;
    r.restart(0);
    QCOMPARE(r.bytesPerSecond(100), 0.0); // too early to tell
    for (qint64 t = 100; t <= 10'000; t += 100)
        r.record(t, 100'000); // 1 MB/s
    QVERIFY(qAbs(r.bytesPerSecond(10'000) - 1e6) < 1e6 * 0.03);
    // Nothing for 2.5 s: half the window is silent.
    QVERIFY(qAbs(r.bytesPerSecond(12'500) - 0.5e6) < 0.5e6 * 0.05);
    QCOMPARE(r.bytesPerSecond(16'000), 0.0);
    r.restart(20'000); // a new run forgets the old one
    QCOMPARE(r.bytesPerSecond(21'000), 0.0);
}

void TestTransferRate::uncappedAllowsEverything() {
    TransferRate r;
    r.restart(0);
    QCOMPARE(r.allowance(0, 1 << 20), qint64(1 << 20));
    QCOMPARE(r.waitMs(), 0);
}

void TestTransferRate::capHoldsAGreedyReaderToTheCap() {
    constexpr qint64 cap = 300'000;
    TransferRate r(cap);
    r.restart(0);
    qint64 now = 0;
    qint64 read = 0;
    int wakeUps = 0;
    while (now < 10'000) {
        const qint64 n = r.allowance(now, 256 << 10);
        if (n == 0) {
            QVERIFY(r.waitMs() >= 5);
            now += r.waitMs();
            ++wakeUps;
            continue;
        }
        r.record(now, n);
        read += n;
    }
    // 10 s at the cap, plus at most the initial burst of a tenth of a second.
    QVERIFY2(read <= cap * 10 + cap / 10 && read >= cap * 10 * 95 / 100, qPrintable(QString::number(read)));
    QVERIFY(qAbs(r.bytesPerSecond(now) - double(cap)) < cap * 0.05);
    QVERIFY2(wakeUps < 10 * 30, "pieces of a worthwhile size, not a wake-up per packet");
}

QTEST_GUILESS_MAIN(TestTransferRate)
#include "test_transfer_rate.moc"
