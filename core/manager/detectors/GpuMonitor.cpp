// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/GpuMonitor.h"

#include "device/Nvml.h"

#include <algorithm>

namespace tessera::manager {

GpuMonitor::GpuMonitor(QString nvmlLibrary)
    : m_library(std::move(nvmlLibrary)) {}

GpuMonitor::~GpuMonitor() = default;

bool GpuMonitor::load() const {
    if (m_loadTried)
        return m_nvml != nullptr;
    // Once: a machine without the driver does not grow one while the app runs, and dlopen is
    // not something to retry four times a second.
    m_loadTried = true;
    auto nvml =
        gpu::Nvml::load(m_library.isEmpty() ? gpu::Nvml::defaultLibraryPath() : m_library.toStdString());
    if (!nvml) {
        m_error = QString::fromStdString(nvml.message());
        return false;
    }
    auto count = (*nvml)->deviceCount();
    if (!count || *count <= 0) {
        m_error = count ? QStringLiteral("NVML sees no NVIDIA GPU") : QString::fromStdString(count.message());
        return false;
    }
    m_deviceCount = *count;
    m_nvml = std::move(*nvml);
    return true;
}

bool GpuMonitor::available() const {
    return load();
}

QString GpuMonitor::unavailableReason() const {
    return load() ? QString() : m_error;
}

const GpuMonitor::Sample* GpuMonitor::sample() {
    if (!load())
        return nullptr;
    const auto now = std::chrono::steady_clock::now();
    if (m_sampledAt && now - *m_sampledAt < kRefresh)
        return &m_sample;
    m_sampledAt = now;
    Sample fresh;
    for (int i = 0; i < m_deviceCount; ++i) {
        auto telemetry = m_nvml->telemetry(i);
        if (!telemetry)
            continue;
        if (telemetry->temperatureC)
            fresh.hottestC =
                std::max(fresh.hottestC.value_or(*telemetry->temperatureC), *telemetry->temperatureC);
        for (auto& process : telemetry->graphicsProcesses)
            fresh.graphicsProcesses.push_back(std::move(process));
    }
    m_sample = std::move(fresh);
    return &m_sample;
}

} // namespace tessera::manager
