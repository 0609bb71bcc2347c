// SPDX-License-Identifier: Apache-2.0
// GpuGraphicsDetector and GpuTemperatureDetector over one GpuMonitor, on a stand-in NVML
// (fake_nvml_manager.c) whose graphics processes and temperature the test changes while it runs,
// with real processes behind the pids so that their names come from the real /proc.
#include "manager/detectors/GpuGraphicsDetector.h"
#include "manager/detectors/GpuMonitor.h"
#include "manager/detectors/GpuTemperatureDetector.h"
#include "test_detectors.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>

#include <dlfcn.h>

using namespace tessera::manager;
using tessera::test::sleepCalled;
using tessera::test::startSleeper;

class TestGpuDetectors final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    void* m_fake = nullptr;
    int (*m_reads)() = nullptr;
    std::unique_ptr<QProcess> m_game;
    std::unique_ptr<QProcess> m_node;
    std::unique_ptr<QProcess> m_shell;

    // Asks until the monitor has read NVML afresh, so that the next check sees what was just set.
    void waitForFreshSample(PauseDetector& detector) {
        const int before = m_reads();
        QTRY_VERIFY_WITH_TIMEOUT(((void)detector.check(), m_reads() > before), 5'000);
    }
    void setGraphics(const QString& processes) { qputenv("FAKE_NVML_GRAPHICS", processes.toUtf8()); }
    void setTemperature(int celsius) { qputenv("FAKE_NVML_TEMPERATURE", QByteArray::number(celsius)); }
    qint64 pid(const std::unique_ptr<QProcess>& process) const { return process->processId(); }

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void init();
    void pausesForAnotherProgramDrawingOnTheGpu();
    void ignoresTheNodeTheAppAndTheDesktop();
    void ignoresSmallUsersButNotUnknownOnes();
    void temperatureResumesOnlyFiveDegreesBelowTheLimit();
    void asksNvmlAtMostOnceASecond();
    void withoutNvmlNeverPauses();
};

void TestGpuDetectors::initTestCase() {
    QVERIFY(m_dir.isValid());
    // Held open by the test too, so that its counter survives the monitors loading and unloading it.
    m_fake = dlopen(FAKE_NVML_MANAGER_PATH, RTLD_NOW);
    QVERIFY2(m_fake, dlerror());
    m_reads = reinterpret_cast<int (*)()>(dlsym(m_fake, "fake_nvml_reads"));
    QVERIFY(m_reads);
    m_game = startSleeper(sleepCalled(m_dir.path(), QStringLiteral("mygame")));
    m_node = startSleeper(sleepCalled(m_dir.path(), QStringLiteral("tessera-node")));
    m_shell = startSleeper(sleepCalled(m_dir.path(), QStringLiteral("gnome-shell")));
    QVERIFY(m_game && m_node && m_shell);
}

void TestGpuDetectors::cleanupTestCase() {
    qunsetenv("FAKE_NVML_GRAPHICS");
    qunsetenv("FAKE_NVML_TEMPERATURE");
    for (auto* process : {m_game.get(), m_node.get(), m_shell.get()}) {
        if (process) {
            process->kill();
            process->waitForFinished();
        }
    }
    if (m_fake)
        dlclose(m_fake);
}

void TestGpuDetectors::init() {
    setGraphics({});
    setTemperature(50);
}

void TestGpuDetectors::pausesForAnotherProgramDrawingOnTheGpu() {
    auto gpu = std::make_shared<GpuMonitor>(QStringLiteral(FAKE_NVML_MANAGER_PATH));
    GpuGraphicsDetector detector(gpu, [this] { return pid(m_node); });
    QVERIFY(detector.available());
    QVERIFY(!detector.check());

    setGraphics(QStringLiteral("%1:1024").arg(pid(m_game)));
    QElapsedTimer latency;
    latency.start();
    QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 5'000);
    qInfo("a game's GPU use was seen %lld ms after NVML reported it", latency.elapsed());
    const auto cause = detector.check();
    QCOMPARE(cause->rule, QStringLiteral("gpu-graphics"));
    QCOMPARE(cause->reason, QStringLiteral("a game is using the GPU: mygame"));
    QVERIFY(cause->game);

    setGraphics({});
    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 5'000);
}

void TestGpuDetectors::ignoresTheNodeTheAppAndTheDesktop() {
    auto gpu = std::make_shared<GpuMonitor>(QStringLiteral(FAKE_NVML_MANAGER_PATH));
    GpuGraphicsDetector detector(gpu, [this] { return pid(m_node); });
    setGraphics(QStringLiteral("%1:4096,%2:900,%3:512")
                    .arg(pid(m_node))
                    .arg(pid(m_shell))
                    .arg(QCoreApplication::applicationPid()));
    waitForFreshSample(detector);
    QVERIFY(!detector.check());

    // The same node pid is another app's once the node is gone.
    GpuGraphicsDetector withoutNode(gpu, {});
    QCOMPARE(withoutNode.check()->reason, QStringLiteral("a game is using the GPU: tessera-node"));
}

void TestGpuDetectors::ignoresSmallUsersButNotUnknownOnes() {
    auto gpu = std::make_shared<GpuMonitor>(QStringLiteral(FAKE_NVML_MANAGER_PATH));
    GpuGraphicsDetector detector(gpu, [] { return qint64(0); });
    setGraphics(QStringLiteral("%1:100").arg(pid(m_game)));
    waitForFreshSample(detector);
    QVERIFY(!detector.check());
    setGraphics(QStringLiteral("%1:256").arg(pid(m_game)));
    waitForFreshSample(detector);
    QVERIFY(detector.check());
    setGraphics(QStringLiteral("%1:?").arg(pid(m_game)));
    waitForFreshSample(detector);
    QCOMPARE(detector.check()->reason, QStringLiteral("a game is using the GPU: mygame"));
}

void TestGpuDetectors::temperatureResumesOnlyFiveDegreesBelowTheLimit() {
    auto gpu = std::make_shared<GpuMonitor>(QStringLiteral(FAKE_NVML_MANAGER_PATH));
    GpuTemperatureDetector detector(gpu, 83);
    // The reason shown once the GPU is at `celsius`; empty: no pause.
    const auto reasonAt = [&](int celsius) {
        setTemperature(celsius);
        waitForFreshSample(detector);
        const auto cause = detector.check();
        return cause ? cause->reason : QString();
    };
    QCOMPARE(reasonAt(82), QString());
    QCOMPARE(reasonAt(86), QStringLiteral("the GPU is at 86 °C (limit 83 °C)"));
    QCOMPARE(reasonAt(80), QStringLiteral("the GPU is at 80 °C (limit 83 °C)")); // still too warm
    QCOMPARE(reasonAt(79), QStringLiteral("the GPU is at 79 °C (limit 83 °C)"));
    QCOMPARE(reasonAt(78), QString());
    QCOMPARE(reasonAt(82), QString()); // cooling down is not warming up
    QCOMPARE(reasonAt(83), QStringLiteral("the GPU is at 83 °C (limit 83 °C)"));
    QCOMPARE(detector.check()->rule, QStringLiteral("temperature"));
    QVERIFY(!detector.check()->game);
}

void TestGpuDetectors::asksNvmlAtMostOnceASecond() {
    // Both rules, four times a second each, read one shared sample.
    auto gpu = std::make_shared<GpuMonitor>(QStringLiteral(FAKE_NVML_MANAGER_PATH));
    GpuGraphicsDetector graphics(gpu, {});
    GpuTemperatureDetector temperature(gpu, 83);
    const int before = m_reads();
    QElapsedTimer timer;
    timer.start();
    int checks = 0;
    while (timer.elapsed() < 2'500) {
        graphics.check();
        temperature.check();
        checks += 2;
        QTest::qWait(50);
    }
    const int reads = m_reads() - before;
    qInfo("%d checks in %lld ms asked NVML %d times", checks, timer.elapsed(), reads);
    QVERIFY2(reads >= 2 && reads <= 1 + int(timer.elapsed() / 1'000) + 1, qPrintable(QString::number(reads)));
}

void TestGpuDetectors::withoutNvmlNeverPauses() {
    auto gpu = std::make_shared<GpuMonitor>(QStringLiteral("/nonexistent/libnvidia-ml.so.1"));
    GpuGraphicsDetector graphics(gpu, {});
    GpuTemperatureDetector temperature(gpu, 1);
    QVERIFY(!graphics.available());
    QVERIFY(!temperature.available());
    QVERIFY2(graphics.unavailableReason().contains(QStringLiteral("NVML")),
             qPrintable(graphics.unavailableReason()));
    QVERIFY(!graphics.check());
    QVERIFY(!temperature.check());
}

namespace tessera::test {
int runGpuDetectorsTests(int argc, char** argv) {
    TestGpuDetectors test;
    return QTest::qExec(&test, argc, argv);
}
} // namespace tessera::test

#include "test_detectors_gpu.moc"
