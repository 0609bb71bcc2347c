// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/GpuGraphicsDetector.h"

#include "manager/detectors/GpuMonitor.h"

#include <QCoreApplication>

namespace tessera::manager {

GpuGraphicsDetector::GpuGraphicsDetector(std::shared_ptr<GpuMonitor> gpu, std::function<qint64()> nodePid)
    : m_gpu(std::move(gpu))
    , m_nodePid(std::move(nodePid)) {}

const QStringList& GpuGraphicsDetector::desktopComponents() {
    // Names as Linux's comm shows them (at most 15 characters: "chromium-browse").
    static const QStringList names = {
        // display servers
        QStringLiteral("Xorg"), QStringLiteral("Xwayland"),
        // compositors and shells
        QStringLiteral("gnome-shell"), QStringLiteral("kwin_x11"), QStringLiteral("kwin_wayland"),
        QStringLiteral("plasmashell"), QStringLiteral("xfwm4"), QStringLiteral("mutter"),
        QStringLiteral("picom"), QStringLiteral("compton"), QStringLiteral("compiz"),
        QStringLiteral("cinnamon"), QStringLiteral("marco"), QStringLiteral("budgie-wm"),
        QStringLiteral("sway"), QStringLiteral("Hyprland"), QStringLiteral("weston"),
        // browsers and Electron apps, which composite their pages on the GPU
        QStringLiteral("firefox"), QStringLiteral("firefox-bin"), QStringLiteral("chrome"),
        QStringLiteral("chromium"), QStringLiteral("chromium-browse"), QStringLiteral("electron"),
        QStringLiteral("code")};
    return names;
}

std::optional<PauseCause> GpuGraphicsDetector::check() {
    const GpuMonitor::Sample* sample = m_gpu->sample();
    if (!sample)
        return std::nullopt;
    const qint64 node = m_nodePid ? m_nodePid() : 0;
    // This app's own window may be drawn by the GPU too.
    const qint64 self = QCoreApplication::applicationPid();
    for (const auto& process : sample->graphicsProcesses) {
        const qint64 pid = process.pid;
        if (pid == node || pid == self)
            continue;
        const QString name = QString::fromStdString(process.name);
        if (desktopComponents().contains(name, Qt::CaseInsensitive))
            continue;
        // 0: the driver does not say (Windows' WDDM, some containers): a game is the safer guess.
        if (process.usedMemoryBytes != 0 && process.usedMemoryBytes < kMinGameMemoryBytes)
            continue;
        const QString shown = name.isEmpty() ? QStringLiteral("process %1").arg(pid) : name;
        return PauseCause{
            rule(), QCoreApplication::translate("PauseReason", "a game is using the GPU: %1").arg(shown),
            true};
    }
    return std::nullopt;
}

bool GpuGraphicsDetector::available() const {
    return m_gpu->available();
}

QString GpuGraphicsDetector::unavailableReason() const {
    return m_gpu->unavailableReason();
}

} // namespace tessera::manager
