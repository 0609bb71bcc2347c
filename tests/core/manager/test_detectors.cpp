// SPDX-License-Identifier: Apache-2.0
// test_detectors: the pause rules' sensors that need no display, each against the real thing — real
// processes in /proc, a stand-in NVML loaded at run time, a private dbus-daemon. The X11 ones are in
// test_x11_detectors.
#include "test_detectors.h"

#include <QCoreApplication>
#include <QFile>

namespace tessera::test {

std::unique_ptr<QProcess> startSleeper(const QString& program, const QStringList& arguments) {
    auto process = std::make_unique<QProcess>();
    process->setProgram(program);
    process->setArguments(arguments.isEmpty() ? QStringList{QStringLiteral("600")} : arguments);
    process->start();
    if (!process->waitForStarted(10'000))
        return nullptr;
    return process;
}

QString sleepCalled(const QString& dir, const QString& name) {
    const QString path = dir + QLatin1Char('/') + name;
    if (!QFile::exists(path) && !QFile::copy(QStringLiteral("/bin/sleep"), path))
        return {};
    return path;
}

} // namespace tessera::test

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    using namespace tessera::test;
    int failed = 0;
    for (auto run : {runExclusiveAppDetectorTests, runTimeWindowsTests, runGpuDetectorsTests,
                     runBatteryDetectorTests, runPauseDetectorsTests})
        failed += run(argc, argv);
    return failed;
}
