// SPDX-License-Identifier: Apache-2.0
#pragma once
// NonceStore: the admission nonces spent, so that none is spent twice. A nonce is issued without
// a write (ChallengeNonce: it carries its own MAC and expiry); a row is written only when a nonce
// that checks out is spent under a valid signature, and kept until the nonce expires.

#include "base/Result.h"

#include <QString>

#include <string>

namespace tessera::coordinator {

class Database;

// What checking and spending a nonce decided; anything but Spent is the client's fault (401).
enum class NonceVerdict { Spent, Unknown, Replayed, ForeignKey, Expired };
// Why a nonce was refused, in words for the client; empty for Spent.
std::string nonceRefusalText(NonceVerdict verdict);

class NonceStore final {
public:
    explicit NonceStore(Database& db)
        : m_db(db) {}

    // Records the nonce spent: Spent the first time, Replayed after. One INSERT that does nothing
    // on a conflict decides, so of two connections racing to spend the same nonce exactly one gets
    // Spent. An error is the database's failure, never a refusal: the caller answers 500.
    Result<NonceVerdict> spend(const QString& nonce, const QString& nodeKey, qint64 expiresAtMs);
    // Deletes the records of nonces expired by nowMs (their expiry refuses them now); returns how many.
    Result<int> purge(qint64 nowMs);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
