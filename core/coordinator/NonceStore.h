#pragma once
// NonceStore: single-use admission challenges, each bound to the node key it was issued to.

#include "Result.h"

#include <QString>

#include <chrono>

namespace tessera::coordinator {

class Database;

class NonceStore final {
public:
    explicit NonceStore(Database& db)
        : m_db(db) {}

    Status issue(const QString& nonce, const QString& nodeKey, qint64 nowMs, std::chrono::milliseconds ttl);
    // Spends the nonce. One conditional UPDATE decides, so of two connections racing to spend
    // the same nonce exactly one succeeds; a replayed, expired, unknown or foreign nonce fails.
    Status consume(const QString& nonce, const QString& nodeKey, qint64 nowMs);
    // Deletes nonces spent or expired by nowMs; returns how many.
    Result<int> purge(qint64 nowMs);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
