// SPDX-License-Identifier: Apache-2.0
#pragma once
// MonotonicClock: milliseconds that only ever move forward (the system's steady clock), for
// timeouts, deadlines, bans, rate limits and heartbeats held in memory. The wall clock
// (QDateTime::currentMSecsSinceEpoch) can step back or forward — NTP, a suspended laptop, an
// operator's `date -s` — and a deadline computed on it then comes an hour late or at once; it is
// only for times that are stored or shown (receipts' issued_at, records' *_at_ms, logs).

#include <QtGlobal>

namespace tessera {

class MonotonicClock final {
public:
    // Milliseconds since an arbitrary moment fixed at boot; comparable within one process run,
    // meaningless across processes or restarts (never store it).
    static qint64 nowMs();
};

} // namespace tessera
