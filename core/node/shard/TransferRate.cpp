// SPDX-License-Identifier: Apache-2.0
#include "node/shard/TransferRate.h"

#include <algorithm>
#include <iterator>

namespace tessera::node {

namespace {
constexpr qint64 kMinSpanMs = 200;
}

void TransferRate::restart(qint64 nowMs) {
    m_total = 0;
    m_samples.assign(1, {nowMs, 0});
    m_tokens = std::max(double(m_cap) / 10, 4096.0);
    m_tokensAtMs = nowMs;
    m_waitMs = 0;
}

void TransferRate::record(qint64 nowMs, qint64 bytes) {
    m_total += bytes;
    if (m_cap > 0)
        m_tokens -= double(bytes);
    m_samples.emplace_back(nowMs, m_total);
    // Keep one sample older than the window: it anchors the window's start.
    while (m_samples.size() > 2 && m_samples[1].first <= nowMs - kWindowMs)
        m_samples.pop_front();
}

double TransferRate::bytesPerSecond(qint64 nowMs) const {
    if (m_samples.empty())
        return 0;
    auto oldest = m_samples.begin();
    while (std::next(oldest) != m_samples.end() && std::next(oldest)->first <= nowMs - kWindowMs)
        ++oldest;
    const qint64 from = std::max(oldest->first, nowMs - kWindowMs);
    const qint64 span = nowMs - from;
    if (span < kMinSpanMs)
        return 0;
    return double(m_total - oldest->second) * 1000.0 / double(span);
}

qint64 TransferRate::allowance(qint64 nowMs, qint64 want) {
    m_waitMs = 0;
    if (m_cap <= 0)
        return want;
    // A burst of a tenth of a second: smooth pacing without a wake-up per packet.
    const double burst = std::max(double(m_cap) / 10, 4096.0);
    m_tokens = std::min(burst, m_tokens + double(nowMs - m_tokensAtMs) * double(m_cap) / 1000.0);
    m_tokensAtMs = nowMs;
    const double piece = std::min({burst, 16384.0, double(want)});
    if (m_tokens < piece) {
        m_waitMs = std::max(5, int((piece - m_tokens) * 1000.0 / double(m_cap)) + 1);
        return 0;
    }
    return std::min<qint64>(want, qint64(m_tokens));
}

} // namespace tessera::node
