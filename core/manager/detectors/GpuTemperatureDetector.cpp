// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/GpuTemperatureDetector.h"

#include <QCoreApplication>

#include "manager/detectors/GpuMonitor.h"

namespace tessera::manager {

GpuTemperatureDetector::GpuTemperatureDetector(std::shared_ptr<GpuMonitor> gpu, int limitC)
    : m_gpu(std::move(gpu))
    , m_limitC(limitC) {}

std::optional<PauseCause> GpuTemperatureDetector::check() {
    const GpuMonitor::Sample* sample = m_gpu->sample();
    if (!sample || !sample->hottestC)
        return std::nullopt;
    const int temperature = *sample->hottestC;
    if (temperature >= m_limitC)
        m_hot = true;
    else if (temperature <= m_limitC - kResumeMarginC)
        m_hot = false;
    if (!m_hot)
        return std::nullopt;
    return PauseCause{rule(),
                      QCoreApplication::translate("PauseReason", "the GPU is at %1 °C (limit %2 °C)")
                          .arg(temperature)
                          .arg(m_limitC),
                      false};
}

bool GpuTemperatureDetector::available() const {
    return m_gpu->available();
}

QString GpuTemperatureDetector::unavailableReason() const {
    return m_gpu->unavailableReason();
}

} // namespace tessera::manager
