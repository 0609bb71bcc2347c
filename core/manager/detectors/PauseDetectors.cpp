// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/PauseDetectors.h"

#include "manager/AppSettings.h"
#include "manager/detectors/BatteryDetector.h"
#include "manager/detectors/ExclusiveAppDetector.h"
#include "manager/detectors/FullscreenDetector.h"
#include "manager/detectors/GpuGraphicsDetector.h"
#include "manager/detectors/GpuMonitor.h"
#include "manager/detectors/GpuTemperatureDetector.h"
#include "manager/detectors/TimeWindowDetector.h"
#include "manager/detectors/UserActiveDetector.h"

#include <QDebug>

#include <algorithm>

namespace tessera::manager {

std::vector<std::unique_ptr<PauseDetector>> makePauseDetectors(const AppSettings& settings,
                                                               const DetectorContext& context) {
    using Key = AppSettings::Key;
    // Game-like rules first: the policy shows the first present cause's reason, and "a game is
    // running" says more than "you are using the computer".
    std::vector<std::unique_ptr<PauseDetector>> detectors;
    QStringList apps = settings.list(Key::PauseExclusiveApps);
    apps.removeIf([](const QString& app) { return app.trimmed().isEmpty(); });
    if (!apps.isEmpty())
        detectors.push_back(std::make_unique<ExclusiveAppDetector>(apps, context.procRoot));
    if (settings.flag(Key::PauseOnFullscreen))
        detectors.push_back(std::make_unique<FullscreenDetector>(context));

    const int temperatureLimit = settings.integer(Key::TemperatureLimitC);
    std::shared_ptr<GpuMonitor> gpu;
    if (settings.flag(Key::PauseOnGpuGraphics) || temperatureLimit > 0)
        gpu = std::make_shared<GpuMonitor>(context.nvmlLibrary); // one NVML for both rules
    if (settings.flag(Key::PauseOnGpuGraphics))
        detectors.push_back(std::make_unique<GpuGraphicsDetector>(gpu, context.nodePid));

    if (settings.flag(Key::PauseOnBattery))
        detectors.push_back(std::make_unique<BatteryDetector>(context.dbusSystemBus));
    if (temperatureLimit > 0)
        detectors.push_back(std::make_unique<GpuTemperatureDetector>(gpu, temperatureLimit));
    if (settings.flag(Key::OnlyWhenIdle)) {
        const std::chrono::minutes idleAfter(std::max(settings.integer(Key::IdleMinutes), 0));
        detectors.push_back(std::make_unique<UserActiveDetector>(idleAfter, context.x11Display));
    }

    const QString windowsText = settings.string(Key::TimeWindows);
    auto windows = TimeWindows::parse(windowsText);
    if (!windows) // the settings dialog validates; a hand-edited file may still be wrong
        qWarning().noquote() << "ignoring the contributing hours:"
                             << QString::fromStdString(windows.message());
    else if (!windows->empty())
        detectors.push_back(std::make_unique<TimeWindowDetector>(std::move(*windows), context.nowMs));
    return detectors;
}

} // namespace tessera::manager
