// SPDX-License-Identifier: Apache-2.0
#pragma once
// GpuTemperatureDetector: the "temperature" rule — pauses while the GPU is at or over the user's
// limit, and resumes only once it has cooled a few degrees below it.

#include "manager/PauseDetector.h"

#include <memory>

namespace tessera::manager {

class GpuMonitor;

class GpuTemperatureDetector final : public PauseDetector {
public:
    // Without the margin a GPU hovering at the limit would pause and resume every few seconds.
    static constexpr int kResumeMarginC = 5;

    GpuTemperatureDetector(std::shared_ptr<GpuMonitor> gpu, int limitC);

    QString rule() const override { return QStringLiteral("temperature"); }
    std::optional<PauseCause> check() override;
    bool available() const override;
    QString unavailableReason() const override;

private:
    std::shared_ptr<GpuMonitor> m_gpu;
    int m_limitC;
    bool m_hot = false;
};

} // namespace tessera::manager
