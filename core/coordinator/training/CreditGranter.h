#pragma once
// CreditGranter: every credit interval, each node's accepted FLOPs not yet in a receipt become one
// signed, hash-chained receipt (TrainingStore::grantCredits), and the node is told to fetch it.
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

    CreditGranter(TrainingStore& store, const Identity& key, SendText sendText)
        : m_store(store)
        , m_key(key)
        , m_sendText(std::move(sendText)) {}

    // The caller flushes the store first. Returns how many nodes got a receipt.
    int grant(qint64 nowMs);

private:
    TrainingStore& m_store;
    const Identity& m_key;
    SendText m_sendText;
};

} // namespace tessera::coordinator
