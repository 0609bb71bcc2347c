// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/AddressRateLimiter.h"

#include "coordinator/http/AddressCounter.h"

#include <algorithm>

namespace tessera::coordinator {

namespace {
constexpr qint64 kWindowMs = 60'000;
}

bool AddressRateLimiter::allow(const QHostAddress& address, qint64 nowMs, int* retryAfterSeconds) {
    if (m_perMinute <= 0)
        return true;
    if (m_windows.size() >= m_dropAt)
        dropEnded(nowMs);
    Window& w = m_windows[http::AddressCounter::keyOf(address)];
    // A clock stepped back starts a new window rather than holding the address out.
    if (nowMs - w.startMs >= kWindowMs || nowMs < w.startMs)
        w = Window{nowMs, 0};
    if (w.count >= m_perMinute) {
        if (retryAfterSeconds != nullptr)
            *retryAfterSeconds = int(std::max<qint64>(1, (w.startMs + kWindowMs - nowMs + 999) / 1000));
        return false;
    }
    ++w.count;
    return true;
}

void AddressRateLimiter::dropEnded(qint64 nowMs) {
    for (auto it = m_windows.begin(); it != m_windows.end();)
        it = nowMs - it->startMs >= kWindowMs ? m_windows.erase(it) : std::next(it);
    // Still large (that many addresses within a minute): look again only when it doubles.
    m_dropAt = std::max<qsizetype>(4096, m_windows.size() * 2);
}

} // namespace tessera::coordinator
