// SPDX-License-Identifier: Apache-2.0
#include "common/WallClock.h"

#include "common/MonotonicClock.h"

#include <QDateTime>

#include <algorithm>

namespace tessera {

namespace {
WallClock& processClock() {
    static WallClock clock;
    return clock;
}
} // namespace

qint64 WallClock::nowMs() {
    return processClock().read(QDateTime::currentMSecsSinceEpoch(), MonotonicClock::nowMs());
}

void WallClock::holdAtLeast(qint64 ms) {
    processClock().floor(ms);
}

qint64 WallClock::read(qint64 systemWallMs, qint64 steadyMs) {
    const std::lock_guard lock(m_mutex);
    // Where the last answer has got to by the steady clock; the system's clock where it is later.
    const qint64 carried = m_started ? m_lastMs + std::max<qint64>(0, steadyMs - m_lastSteady) : systemWallMs;
    m_lastMs = std::max({carried, systemWallMs, m_floorMs});
    m_lastSteady = steadyMs;
    m_started = true;
    return m_lastMs;
}

void WallClock::floor(qint64 ms) {
    const std::lock_guard lock(m_mutex);
    m_floorMs = std::max(m_floorMs, ms);
}

} // namespace tessera
