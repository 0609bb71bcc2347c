// SPDX-License-Identifier: Apache-2.0
#pragma once
// test_detectors: the GUI-less detectors' test classes, one per unit, run by one program.

#include <QProcess>
#include <QString>
#include <QStringList>

#include <memory>

namespace tessera::test {

int runExclusiveAppDetectorTests(int argc, char** argv);
int runTimeWindowsTests(int argc, char** argv);
int runGpuDetectorsTests(int argc, char** argv);
int runBatteryDetectorTests(int argc, char** argv);
int runPauseDetectorsTests(int argc, char** argv);

// A real process running `program` (sleeps until killed); nullptr when it did not start.
std::unique_ptr<QProcess> startSleeper(const QString& program, const QStringList& arguments = {});
// A copy of /bin/sleep named `name` in `dir`: a process whose kernel name is `name`.
QString sleepCalled(const QString& dir, const QString& name);

} // namespace tessera::test
