// SPDX-License-Identifier: Apache-2.0
#pragma once
// SyncProgress: how far this node's weights took a ghost sync that comes in chunks (protocol::Sync:
// the stage's weights in parameter order, a bounded chunk at a time). A chunk is taken only where
// the weights stop: the start of a new round, or the end of what this round already gave (queued
// chunks included) — so a sync resumed after a pause or a dropped session continues where it was
// cut, and one that does not fit what this node holds is refused rather than mixed in.
// What the node holds is its own to say (Ready's sync_round/sync_received): a node that lies about it
// only gets weights it does not have, which the audits of its results catch like any other.

#include <QString>
#include <QtGlobal>

namespace tessera::node {

class SyncProgress {
public:
    // Empty when the chunk [offset, offset + count) of `round`'s sync of `total` weights can be
    // queued now; else why not.
    QString refusal(qint64 round, qint64 offset, qint64 count, qint64 total) const;
    // The chunk was queued to the engine (call after refusal() was empty).
    void queued(qint64 round, qint64 end);
    // The engine applied the chunk [offset, end) (ok), or failed it: then what was queued after it is
    // void (a chunk applied after a failed one does not count), and the round continues from what
    // was applied. True when the sync is complete.
    bool applied(qint64 round, qint64 offset, qint64 end, qint64 total, bool ok);

    // The round the weights hold a part of, and how many weights of it (0, 0: none).
    qint64 round() const { return m_round; }
    qint64 received() const { return m_received; }
    qint64 receivedOf(qint64 round) const { return round == m_round ? m_received : 0; }

private:
    qint64 m_round = 0;    // of the sync in progress
    qint64 m_received = 0; // weights applied, from the start
    qint64 m_queued = 0;   // weights applied or queued, from the start
};

} // namespace tessera::node
