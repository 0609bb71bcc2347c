// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditGranter: every credit interval, each node's accepted FLOPs that have left escrow — older
// than the escrow time and covered by an audit the node passed after them — become one signed,
// hash-chained receipt (TrainingStore::grantCredits), and the node is told to fetch it.
// Credit is granted only from accounting that is written: with writes still queued it waits.

#include "protocol/SessionMessages.h"

#include <QString>

#include <functional>

namespace tessera {
class Identity;
}

namespace tessera::coordinator {

class TrainingStore;

class CreditGranter final {
public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;

    // escrowMs: accepted work stays pending this long at least (and until an audit covers it).
    CreditGranter(TrainingStore& store, const Identity& key, qint64 escrowMs, SendText sendText)
        : m_store(store)
        , m_key(key)
        , m_escrowMs(escrowMs)
        , m_sendText(std::move(sendText)) {}

    // The caller flushes the store first. Returns how many nodes got a receipt.
    int grant(qint64 nowMs);
    // A failed audit: the node's pending credit is forfeited; it is told to look (credits page).
    void forfeit(const QString& node, const QString& reason, qint64 nowMs);

private:
    TrainingStore& m_store;
    const Identity& m_key;
    qint64 m_escrowMs;
    SendText m_sendText;
};

} // namespace tessera::coordinator
