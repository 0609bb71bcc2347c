// SPDX-License-Identifier: Apache-2.0
#pragma once
// PauseDetectors: builds the detectors the user's settings turn on, with this platform's sensors.

#include "manager/PauseDetector.h"

#include <QString>

#include <functional>
#include <memory>
#include <vector>

namespace tessera::manager {

class AppSettings;

// What the detectors need to know about their surroundings; tests point them elsewhere.
struct DetectorContext {
    // The supervised node's pid (0 when none): its own use of the GPU is not "another app".
    std::function<qint64()> nodePid;
    QString nvmlLibrary; // empty: gpu::Nvml::defaultLibraryPath()
    QString procRoot = QStringLiteral("/proc");
    QString x11Display;            // empty: $DISPLAY
    QString dbusSystemBus;         // empty: the system bus (UPower lives there)
    std::function<qint64()> nowMs; // the wall clock (time windows); empty: the real one
};

std::vector<std::unique_ptr<PauseDetector>> makePauseDetectors(const AppSettings& settings,
                                                               const DetectorContext& context);

} // namespace tessera::manager
