// SPDX-License-Identifier: Apache-2.0
#pragma once
// GpuMonitor: NVML's view of this machine's NVIDIA GPUs for the pause rules — loaded once on first
// use, asked at most once a second however often the rules look, shared by the GPU detectors.

#include "device/DeviceInfo.h"

#include <QString>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::gpu {
class Nvml;
}

namespace tessera::manager {

class GpuMonitor {
public:
    static constexpr std::chrono::milliseconds kRefresh{1'000};

    // What the rules need from all GPUs together.
    struct Sample {
        std::vector<gpu::GpuProcess> graphicsProcesses;
        std::optional<int> hottestC; // the hottest GPU's temperature; nullopt when none says
    };

    // nvmlLibrary: empty: gpu::Nvml::defaultLibraryPath().
    explicit GpuMonitor(QString nvmlLibrary = {});
    ~GpuMonitor();
    GpuMonitor(const GpuMonitor&) = delete;
    GpuMonitor& operator=(const GpuMonitor&) = delete;

    // The latest sample, taken now when the last is older than kRefresh; nullptr without NVML.
    const Sample* sample();
    bool available() const;
    QString unavailableReason() const;

private:
    bool load() const;

    QString m_library;
    mutable std::unique_ptr<gpu::Nvml> m_nvml;
    mutable bool m_loadTried = false;
    mutable QString m_error;
    mutable int m_deviceCount = 0;
    Sample m_sample;
    std::optional<std::chrono::steady_clock::time_point> m_sampledAt;
};

} // namespace tessera::manager
