// SPDX-License-Identifier: Apache-2.0
// BatteryDetector against a private dbus-daemon on which the test plays UPower: the cached answer
// follows UPower's change signals, and a machine without UPower is told so.
#include "manager/detectors/BatteryDetector.h"
#include "test_detectors.h"
#include "test_detectors_upower.h"

#include <QElapsedTimer>
#include <QTest>

using namespace tessera::manager;
using tessera::test::FakeUPower;

class TestBatteryDetector final : public QObject {
    Q_OBJECT

    QProcess m_daemon;
    QString m_address;

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void followsUPowerOnBattery();
    void withoutUPowerIsUnavailable();
    void noticesUPowerStartingAndStopping();
    void withoutABusIsUnavailable();
};

void TestBatteryDetector::initTestCase() {
    if (QStringLiteral(DBUS_DAEMON_PATH).isEmpty())
        QSKIP("no dbus-daemon on this machine: install the dbus-daemon package");
    m_daemon.start(QStringLiteral(DBUS_DAEMON_PATH), {QStringLiteral("--session"), QStringLiteral("--nofork"),
                                                      QStringLiteral("--print-address")});
    QVERIFY(m_daemon.waitForStarted(10'000));
    QTRY_VERIFY_WITH_TIMEOUT(m_daemon.canReadLine(), 10'000);
    m_address = QString::fromUtf8(m_daemon.readLine().trimmed());
    QVERIFY(!m_address.isEmpty());
}

void TestBatteryDetector::cleanupTestCase() {
    m_daemon.terminate();
    m_daemon.waitForFinished(10'000);
}

void TestBatteryDetector::followsUPowerOnBattery() {
    FakeUPower upower(m_address, false);
    QVERIFY(upower.registered());
    BatteryDetector detector(m_address);
    QTRY_VERIFY_WITH_TIMEOUT(detector.available(), 5'000);
    QVERIFY(!detector.check());

    upower.setOnBattery(true);
    QElapsedTimer latency;
    latency.start();
    QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 1'000);
    qInfo("on battery %lld ms after UPower said so", latency.elapsed());
    const auto cause = detector.check();
    QCOMPARE(cause->rule, QStringLiteral("battery"));
    QCOMPARE(cause->reason, QStringLiteral("on battery"));
    QVERIFY(!cause->game);

    upower.setOnBattery(false);
    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 1'000);
}

void TestBatteryDetector::withoutUPowerIsUnavailable() {
    BatteryDetector detector(m_address);
    QTRY_COMPARE_WITH_TIMEOUT(detector.unavailableReason(), QStringLiteral("no UPower on this machine"),
                              5'000);
    QVERIFY(!detector.available());
    QVERIFY(!detector.check());
}

void TestBatteryDetector::noticesUPowerStartingAndStopping() {
    BatteryDetector detector(m_address);
    QTRY_VERIFY_WITH_TIMEOUT(!detector.unavailableReason().startsWith(QStringLiteral("asking")), 5'000);
    QVERIFY(!detector.available());
    {
        FakeUPower upower(m_address, true);
        QVERIFY(upower.registered());
        QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 5'000);
        QVERIFY(detector.available());
    }
    QTRY_VERIFY_WITH_TIMEOUT(!detector.available(), 5'000);
    QVERIFY(!detector.check());
}

void TestBatteryDetector::withoutABusIsUnavailable() {
    BatteryDetector detector(QStringLiteral("unix:path=/nonexistent/bus"));
    QVERIFY(!detector.available());
    QVERIFY2(detector.unavailableReason().startsWith(QStringLiteral("no UPower on this machine")),
             qPrintable(detector.unavailableReason()));
    QVERIFY(!detector.check());
}

namespace tessera::test {
int runBatteryDetectorTests(int argc, char** argv) {
    TestBatteryDetector test;
    return QTest::qExec(&test, argc, argv);
}
} // namespace tessera::test

#include "test_detectors_battery.moc"
