// SPDX-License-Identifier: Apache-2.0
// makePauseDetectors: the settings decide which rules watch, in the order their reasons are shown.
#include "manager/AppSettings.h"
#include "manager/detectors/PauseDetectors.h"
#include "test_detectors.h"

#include <QTemporaryDir>
#include <QTest>

using namespace tessera::manager;
using Key = AppSettings::Key;

namespace {

QStringList rules(const AppSettings& settings) {
    QStringList out;
    DetectorContext context;
    context.dbusSystemBus = QStringLiteral("unix:path=/nonexistent/bus"); // no system bus in a test
    for (const auto& detector : makePauseDetectors(settings, context))
        out.append(detector->rule());
    return out;
}

} // namespace

class TestPauseDetectors final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private Q_SLOTS:
    void defaultsWatchGamesBatteryAndHeat();
    void everyRuleOff();
    void idleAndHoursWhenAsked();
};

void TestPauseDetectors::defaultsWatchGamesBatteryAndHeat() {
    AppSettings settings(m_dir.filePath(QStringLiteral("defaults.ini")));
    QCOMPARE(rules(settings), (QStringList{QStringLiteral("exclusive-app"), QStringLiteral("fullscreen"),
                                           QStringLiteral("gpu-graphics"), QStringLiteral("battery"),
                                           QStringLiteral("temperature")}));
}

void TestPauseDetectors::everyRuleOff() {
    AppSettings settings(m_dir.filePath(QStringLiteral("off.ini")));
    settings.setValue(Key::PauseExclusiveApps, QStringList{});
    settings.setValue(Key::PauseOnFullscreen, false);
    settings.setValue(Key::PauseOnGpuGraphics, false);
    settings.setValue(Key::PauseOnBattery, false);
    settings.setValue(Key::TemperatureLimitC, 0);
    QCOMPARE(rules(settings), QStringList());
    settings.setValue(Key::PauseExclusiveApps, QStringList{QStringLiteral(" ")});
    QCOMPARE(rules(settings), QStringList());
}

void TestPauseDetectors::idleAndHoursWhenAsked() {
    AppSettings settings(m_dir.filePath(QStringLiteral("idle.ini")));
    settings.setValue(Key::PauseExclusiveApps, QStringList{QStringLiteral("witcher3")});
    settings.setValue(Key::PauseOnFullscreen, false);
    settings.setValue(Key::PauseOnGpuGraphics, false);
    settings.setValue(Key::PauseOnBattery, false);
    settings.setValue(Key::OnlyWhenIdle, true);
    settings.setValue(Key::TimeWindows, QStringLiteral("Sat-Sun"));
    QCOMPARE(rules(settings), (QStringList{QStringLiteral("exclusive-app"), QStringLiteral("temperature"),
                                           QStringLiteral("user-active"), QStringLiteral("time-window")}));
    // Hours the dialog would have refused leave the rule out rather than pausing for ever.
    settings.setValue(Key::TimeWindows, QStringLiteral("Sat-Sunday-ish"));
    QVERIFY(!rules(settings).contains(QStringLiteral("time-window")));
}

namespace tessera::test {
int runPauseDetectorsTests(int argc, char** argv) {
    TestPauseDetectors test;
    return QTest::qExec(&test, argc, argv);
}
} // namespace tessera::test

#include "test_detectors_factory.moc"
