// SPDX-License-Identifier: Apache-2.0
#pragma once
// TransferRate: a transfer's moving-average rate, and the token bucket that keeps it under the
// volunteer's bandwidth cap. Times are the caller's milliseconds, so tests need no clock.

#include <QtGlobal>

#include <deque>
#include <utility>

namespace tessera::node {

class TransferRate final {
public:
    static constexpr qint64 kWindowMs = 5'000;

    // capBytesPerSecond 0: no cap.
    explicit TransferRate(qint64 capBytesPerSecond = 0)
        : m_cap(capBytesPerSecond) {}

    // A new transfer starts at nowMs: the rate forgets the old one, the bucket starts full.
    void restart(qint64 nowMs);
    void record(qint64 nowMs, qint64 bytes);
    // Bytes per second from the oldest sample in the window to now, so a stalled transfer's rate
    // falls towards 0; 0 until 200 ms have passed.
    double bytesPerSecond(qint64 nowMs) const;

    // How many bytes may be read now, at most `want`; 0 means wait waitMs() first. Reading is
    // held back until a worthwhile piece (16 KiB or a tenth of a second's worth) is allowed.
    qint64 allowance(qint64 nowMs, qint64 want);
    int waitMs() const { return m_waitMs; }
    qint64 cap() const { return m_cap; }

private:
    qint64 m_cap;
    double m_tokens = 0;
    qint64 m_tokensAtMs = 0;
    int m_waitMs = 0;
    qint64 m_total = 0;
    std::deque<std::pair<qint64, qint64>> m_samples; // (ms, m_total then)
};

} // namespace tessera::node
