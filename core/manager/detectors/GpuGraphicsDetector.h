// SPDX-License-Identifier: Apache-2.0
#pragma once
// GpuGraphicsDetector: the "gpu-graphics" rule — pauses while another program draws with the GPU
// in earnest (a game that is on no list), as NVML reports it.

#include "manager/PauseDetector.h"

#include <QStringList>

#include <cstdint>
#include <functional>
#include <memory>

namespace tessera::manager {

class GpuMonitor;

class GpuGraphicsDetector final : public PauseDetector {
public:
    // Less GPU memory than this is a small app drawing its window, not a game.
    static constexpr std::uint64_t kMinGameMemoryBytes = 256ULL << 20;

    // nodePid: the supervised node's pid (0: none); its own GPU use is not another app's.
    GpuGraphicsDetector(std::shared_ptr<GpuMonitor> gpu, std::function<qint64()> nodePid);

    QString rule() const override { return QStringLiteral("gpu-graphics"); }
    std::optional<PauseCause> check() override;
    bool available() const override;
    QString unavailableReason() const override;

    // Programs that always draw with the GPU on a desktop (its display server, compositors, shells,
    // browsers and Electron apps): pausing for them would mean never contributing.
    static const QStringList& desktopComponents();

private:
    std::shared_ptr<GpuMonitor> m_gpu;
    std::function<qint64()> m_nodePid;
};

} // namespace tessera::manager
