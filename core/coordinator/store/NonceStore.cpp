#include "coordinator/store/NonceStore.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

std::string nonceRefusalText(NonceVerdict verdict) {
    switch (verdict) {
    case NonceVerdict::Spent:
        return {};
    case NonceVerdict::Unknown:
        return "unknown admission nonce; ask for a new challenge";
    case NonceVerdict::Replayed:
        return "admission nonce already used (replay refused); ask for a new challenge";
    case NonceVerdict::ForeignKey:
        return "admission nonce was issued to another node key";
    case NonceVerdict::Expired:
        return "admission nonce expired; ask for a new challenge";
    }
    return "admission nonce refused";
}

Status NonceStore::issue(const QString& nonce, const QString& nodeKey, qint64 nowMs,
                         std::chrono::milliseconds ttl) {
    if (ttl.count() <= 0)
        return makeError("a nonce needs a positive lifetime");
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral(
                      "INSERT INTO admission_nonces (nonce, node_key, expires_at, used) VALUES (?, ?, ?, 0)"),
                  {nonce, nodeKey, nowMs + qint64(ttl.count())});
    return q ? Status() : Status(q.error());
}

Result<NonceVerdict> NonceStore::consume(const QString& nonce, const QString& nodeKey, qint64 nowMs) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("UPDATE admission_nonces SET used = 1 "
                                 "WHERE nonce = ? AND node_key = ? AND used = 0 AND expires_at > ?"),
                  {nonce, nodeKey, nowMs});
    if (!q)
        return q.error();
    if (q->numRowsAffected() == 1)
        return NonceVerdict::Spent;

    // Refused. Look again only to say why: the decision above is already final.
    Result<QSqlQuery> why = sql::exec(
        m_db.connection(),
        QStringLiteral("SELECT node_key, expires_at, used FROM admission_nonces WHERE nonce = ?"), {nonce});
    if (!why)
        return why.error();
    if (!why->next())
        return NonceVerdict::Unknown;
    if (why->value(2).toInt() != 0)
        return NonceVerdict::Replayed;
    if (why->value(0).toString() != nodeKey)
        return NonceVerdict::ForeignKey;
    return NonceVerdict::Expired;
}

Result<int> NonceStore::purge(qint64 nowMs) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("DELETE FROM admission_nonces WHERE used = 1 OR expires_at <= ?"), {nowMs});
    if (!q)
        return q.error();
    return q->numRowsAffected();
}

} // namespace tessera::coordinator
