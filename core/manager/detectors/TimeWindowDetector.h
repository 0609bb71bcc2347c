// SPDX-License-Identifier: Apache-2.0
#pragma once
// TimeWindowDetector: the "time-window" rule — pauses outside the hours the user contributes in.

#include "manager/PauseDetector.h"
#include "manager/detectors/TimeWindows.h"

#include <functional>

namespace tessera::manager {

class TimeWindowDetector final : public PauseDetector {
public:
    // nowMs: the wall clock in ms since the epoch (tests choose the instant); empty: the real one.
    explicit TimeWindowDetector(TimeWindows windows, std::function<qint64()> nowMs = {});

    QString rule() const override { return QStringLiteral("time-window"); }
    std::optional<PauseCause> check() override;

private:
    TimeWindows m_windows;
    std::function<qint64()> m_nowMs;
};

} // namespace tessera::manager
