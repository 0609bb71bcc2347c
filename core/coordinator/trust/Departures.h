// SPDX-License-Identifier: Apache-2.0
#pragma once
// Departures: a node that leaves — its socket closed, or it paused — while the coordinator waits on it for
// evidence (a trace a bisection or a share check asked for, the weights an audit asked for) cannot be told
// from one whose process ended or whose user started a game. It is excused once a day: not struck, its
// evidence unjudged (its credit stays in escrow, it goes on probation); a second departure within the day
// while evidence is owed is struck, as silence is — a node that leaves whenever it is checked gains nothing.
// (Issue 41, session 9: a coordinator restart and `test_swarm`'s SIGKILLs struck honest nodes that way.)
// The record is the coordinator process's: a restart forgets it (an attacker cannot restart it).
// Single-threaded (the coordinator's thread).

#include <QHash>
#include <QString>

namespace tessera::coordinator {

class Departures final {
public:
    static constexpr qint64 kWindowMs = 24LL * 3600 * 1000;

    // True (and remembered) when the node's last excused departure is a day old or there was none.
    bool excuse(const QString& node, qint64 nowMs) {
        const auto last = m_excused.constFind(node);
        if (last != m_excused.constEnd() && nowMs - last.value() < kWindowMs)
            return false;
        m_excused.insert(node, nowMs);
        return true;
    }

private:
    QHash<QString, qint64> m_excused; // node → when its last excused departure was
};

} // namespace tessera::coordinator
