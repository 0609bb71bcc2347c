#pragma once
// NonceStore: single-use admission challenges, each bound to the node key it was issued to.

#include "base/Result.h"

#include <QString>

#include <chrono>
#include <string>

namespace tessera::coordinator {

class Database;

// What spending a nonce decided; anything but Spent is the client's fault (401).
enum class NonceVerdict { Spent, Unknown, Replayed, ForeignKey, Expired };
// Why a nonce was refused, in words for the client; empty for Spent.
std::string nonceRefusalText(NonceVerdict verdict);

class NonceStore final {
public:
    explicit NonceStore(Database& db)
        : m_db(db) {}

    Status issue(const QString& nonce, const QString& nodeKey, qint64 nowMs, std::chrono::milliseconds ttl);
    // Spends the nonce. One conditional UPDATE decides, so of two connections racing to spend
    // the same nonce exactly one gets Spent; a replayed, expired, unknown or foreign nonce gets
    // its refusal. An error is the database's failure, never a refusal: the caller answers 500.
    Result<NonceVerdict> consume(const QString& nonce, const QString& nodeKey, qint64 nowMs);
    // Deletes nonces spent or expired by nowMs; returns how many.
    Result<int> purge(qint64 nowMs);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
