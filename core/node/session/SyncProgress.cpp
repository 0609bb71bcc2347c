// SPDX-License-Identifier: Apache-2.0
#include "node/session/SyncProgress.h"

namespace tessera::node {

QString SyncProgress::refusal(qint64 round, qint64 offset, qint64 count, qint64 total) const {
    if (count <= 0 || offset < 0 || offset > total - count)
        return QStringLiteral("the chunk %1+%2 is not within the sync's %3 weights")
            .arg(offset)
            .arg(count)
            .arg(total);
    const qint64 expected = round == m_round ? m_queued : 0;
    if (offset != expected)
        return round == m_round || m_round == 0
                   ? QStringLiteral("the chunk starts at %1; this node's weights took round %2 up to %3")
                         .arg(offset)
                         .arg(round)
                         .arg(expected)
                   : QStringLiteral(
                         "the chunk starts at %1 of round %2; this node holds weights of round %3 up "
                         "to %4, none of round %2")
                         .arg(offset)
                         .arg(round)
                         .arg(m_round)
                         .arg(m_received);
    return {};
}

void SyncProgress::queued(qint64 round, qint64 end) {
    if (round != m_round) {
        m_round = round;
        m_received = 0;
    }
    m_queued = end;
}

bool SyncProgress::applied(qint64 round, qint64 offset, qint64 end, qint64 total, bool ok) {
    if (round != m_round || offset != m_received)
        return false;
    if (!ok) {
        m_queued = m_received;
        return false;
    }
    m_received = end;
    if (end < total)
        return false;
    m_round = m_received = m_queued = 0; // complete: nothing partial is held
    return true;
}

} // namespace tessera::node
