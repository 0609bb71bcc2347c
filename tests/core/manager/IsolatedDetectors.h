// SPDX-License-Identifier: Apache-2.0
#pragma once
// IsolatedDetectors: pause-rule surroundings cut off from the machine running the tests — an empty
// /proc, no NVML, no X display, no system bus — for tests about the app rather than its sensors.

#include "manager/detectors/PauseDetectors.h"

#include <QDir>
#include <QString>

namespace tessera::test {

// dir: a folder of the test's own (nothing is created in it).
inline manager::DetectorContext isolatedDetectors(const QString& dir) {
    manager::DetectorContext context;
    context.procRoot = QDir(dir).filePath(QStringLiteral("empty-proc"));
    context.nvmlLibrary = QDir(dir).filePath(QStringLiteral("no-libnvidia-ml.so"));
    context.x11Display = QStringLiteral(":9999");
    context.dbusSystemBus =
        QStringLiteral("unix:path=") + QDir(dir).filePath(QStringLiteral("no-system-bus"));
    return context;
}

} // namespace tessera::test
