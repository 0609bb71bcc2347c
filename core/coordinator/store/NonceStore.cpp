// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/NonceStore.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

std::string nonceRefusalText(NonceVerdict verdict) {
    switch (verdict) {
    case NonceVerdict::Spent:
        return {};
    case NonceVerdict::Unknown:
        return "unknown admission nonce (not one this coordinator issues); ask for a new challenge";
    case NonceVerdict::Replayed:
        return "admission nonce already used (replay refused); ask for a new challenge";
    case NonceVerdict::ForeignKey:
        return "admission nonce was not issued to this node key; ask for a new challenge";
    case NonceVerdict::Expired:
        return "admission nonce expired; ask for a new challenge";
    }
    return "admission nonce refused";
}

Result<NonceVerdict> NonceStore::spend(const QString& nonce, const QString& nodeKey, qint64 expiresAtMs) {
    // ON CONFLICT DO NOTHING: SQLite 3.24+ and PostgreSQL 9.5+ alike.
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("INSERT INTO admission_nonces (nonce, node_key, expires_at, used) "
                                 "VALUES (?, ?, ?, 1) ON CONFLICT (nonce) DO NOTHING"),
                  {nonce, nodeKey, expiresAtMs});
    if (!q)
        return q.error();
    return q->numRowsAffected() == 1 ? NonceVerdict::Spent : NonceVerdict::Replayed;
}

Result<int> NonceStore::purge(qint64 nowMs) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(), QStringLiteral("DELETE FROM admission_nonces WHERE expires_at <= ?"), {nowMs});
    if (!q)
        return q.error();
    return q->numRowsAffected();
}

} // namespace tessera::coordinator
