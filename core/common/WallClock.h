// SPDX-License-Identifier: Apache-2.0
#pragma once
// WallClock: the time the coordinator stores and compares (receipts' issued_at, leases, bans, audits'
// coverage, heartbeats), in milliseconds since the epoch, that never moves backward while a process
// runs and never reads earlier than what a previous process stored (holdAtLeast at start).
//
// The system's wall clock can step back — an operator's `date -s`, NTP correcting a fast clock, a VM
// restored from a snapshot. Read directly, an hour back made new work look an hour older than audits
// that had already passed (paid from escrow without an audit covering it), heartbeats an hour in the
// future (a dead node kept for an hour), and rate buckets an hour in debt (every message refused).
// So: a backward step is not followed (time goes on at the steady clock's rate from the last answer);
// a forward step is (as after a suspend). A clock that was an hour fast and is corrected keeps its
// hour until the process restarts and the stored times are behind it. MonotonicClock stays the clock
// for timeouts and deadlines that are never stored.

#include <QtGlobal>

#include <mutex>

namespace tessera {

class WallClock final {
public:
    // The process's clock: the system's wall clock as described above. Thread-safe.
    static qint64 nowMs();
    // The process's clock never answers earlier than `ms` from now on (the latest stored time).
    static void holdAtLeast(qint64 ms);

    // One clock, fed the system's readings (the process's clock feeds it the real ones; tests their own).
    qint64 read(qint64 systemWallMs, qint64 steadyMs);
    void floor(qint64 ms);

private:
    std::mutex m_mutex;
    bool m_started = false;
    qint64 m_lastMs = 0;     // the last answer
    qint64 m_lastSteady = 0; // the steady clock at that answer
    qint64 m_floorMs = 0;
};

} // namespace tessera
