// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/TimeWindowDetector.h"

#include <QCoreApplication>
#include <QDateTime>

namespace tessera::manager {

TimeWindowDetector::TimeWindowDetector(TimeWindows windows, std::function<qint64()> nowMs)
    : m_windows(std::move(windows))
    , m_nowMs(std::move(nowMs)) {
    if (!m_nowMs)
        m_nowMs = [] { return QDateTime::currentMSecsSinceEpoch(); };
}

std::optional<PauseCause> TimeWindowDetector::check() {
    // The user's hours are local time, daylight saving included.
    const QDateTime now = QDateTime::fromMSecsSinceEpoch(m_nowMs(), Qt::LocalTime);
    if (m_windows.contains(now))
        return std::nullopt;
    return PauseCause{rule(),
                      QCoreApplication::translate("PauseReason", "outside your contributing hours (%1)")
                          .arg(m_windows.text()),
                      false};
}

} // namespace tessera::manager
