// SPDX-License-Identifier: Apache-2.0
#pragma once
// SessionStore: node sessions, keyed by a hash of their bearer token, with expiry and revocation.

#include "base/Result.h"

#include <QString>
#include <QStringList>

#include <chrono>
#include <optional>

namespace tessera::coordinator {

class Database;

struct SessionRecord {
    QString tokenHash;
    QString nodeId;
    qint64 createdAtMs = 0;
    qint64 expiresAtMs = 0;
    qint64 lastHeartbeatMs = 0;
    bool revoked = false;
};

class SessionStore final {
public:
    explicit SessionStore(Database& db)
        : m_db(db) {}

    // tokenHash: the caller hashes the token (SHA-256, hex) so that the database never holds a
    // usable credential. The node must be registered.
    Status create(const QString& tokenHash, const QString& nodeId, qint64 nowMs,
                  std::chrono::milliseconds ttl);
    // The session when it exists, is not revoked and has not expired at nowMs.
    Result<std::optional<SessionRecord>> findValid(const QString& tokenHash, qint64 nowMs);
    // Records a heartbeat: false when the session is no longer valid (unknown, revoked or
    // expired), so the caller drops it; an error is a failed statement.
    Result<bool> heartbeat(const QString& tokenHash, qint64 nowMs);
    // Many heartbeats at once, all recorded at nowMs, in a few statements whatever their number
    // (what the session API flushes); returns the hashes that are no longer valid.
    Result<QStringList> heartbeatMany(const QStringList& tokenHashes, qint64 nowMs);
    // Whether the node holds a valid session other than `tokenHash` at nowMs: it was re-admitted.
    Result<bool> hasOtherValid(const QString& nodeId, const QString& tokenHash, qint64 nowMs);
    Status revoke(const QString& tokenHash);
    // Revokes every session of a node (banned, or re-admitted elsewhere); returns how many.
    Result<int> revokeNode(const QString& nodeId);
    // Deletes sessions expired or revoked by nowMs; returns how many.
    Result<int> purge(qint64 nowMs);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
