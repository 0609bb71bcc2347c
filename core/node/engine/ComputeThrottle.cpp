// SPDX-License-Identifier: Apache-2.0
// ComputeThrottle: the duty cycle between tasks, and the measured compute share.
#include "node/engine/ComputeThrottle.h"

#include <algorithm>
#include <cmath>

namespace tessera::node {

using std::chrono::nanoseconds;

ComputeThrottle::ComputeThrottle(double limit, nanoseconds window)
    : m_window(std::max(window, nanoseconds(1))) {
    setLimit(limit);
}

void ComputeThrottle::setLimit(double limit) {
    m_limit = std::isnan(limit) ? 1.0 : std::clamp(limit, kMinLimit, 1.0);
}

nanoseconds ComputeThrottle::restBefore(TimePoint now) const {
    if (!m_last || m_limit >= 1.0)
        return nanoseconds(0);
    const double computed = double((m_last->end - m_last->start).count());
    const auto rest = nanoseconds(std::llround(computed * (1.0 - m_limit) / m_limit));
    const TimePoint earliest = m_last->end + rest;
    return earliest > now ? earliest - now : nanoseconds(0);
}

void ComputeThrottle::recordCompute(TimePoint start, TimePoint end) {
    end = std::max(start, end);
    if (!m_firstStart)
        m_firstStart = start;
    m_last = Interval{start, end};
    m_total += end - start;
    m_recent.push_back(*m_last);
    prune(end);
}

void ComputeThrottle::prune(TimePoint now) {
    while (!m_recent.empty() && m_recent.front().end <= now - m_window)
        m_recent.pop_front();
}

double ComputeThrottle::computeShare(TimePoint now) const {
    if (!m_firstStart || now <= *m_firstStart)
        return 0;
    const TimePoint from = std::max(now - m_window, *m_firstStart);
    nanoseconds busy{0};
    for (const Interval& i : m_recent) {
        const TimePoint a = std::max(i.start, from);
        const TimePoint b = std::min(i.end, now);
        if (b > a)
            busy += b - a;
    }
    return double(busy.count()) / double((now - from).count());
}

double ComputeThrottle::totalComputeShare(TimePoint now) const {
    if (!m_firstStart || now <= *m_firstStart)
        return 0;
    return std::min(1.0, double(m_total.count()) / double((now - *m_firstStart).count()));
}

} // namespace tessera::node
