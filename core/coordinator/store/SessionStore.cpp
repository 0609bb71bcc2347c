// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/SessionStore.h"

#include <QSet>

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

Status SessionStore::create(const QString& tokenHash, const QString& nodeId, qint64 nowMs,
                            std::chrono::milliseconds ttl) {
    if (ttl.count() <= 0)
        return makeError("a session needs a positive lifetime");
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("INSERT INTO sessions (token_hash, node_id, created_at, expires_at, "
                                 "last_heartbeat, revoked) VALUES (?, ?, ?, ?, ?, 0)"),
                  {tokenHash, nodeId, nowMs, nowMs + qint64(ttl.count()), nowMs});
    return q ? Status() : Status(q.error());
}

Result<std::optional<SessionRecord>> SessionStore::findValid(const QString& tokenHash, qint64 nowMs) {
    Result<QSqlQuery> q = sql::exec(m_db.connection(),
                                    QStringLiteral("SELECT token_hash, node_id, created_at, expires_at, "
                                                   "last_heartbeat, revoked FROM sessions "
                                                   "WHERE token_hash = ? AND revoked = 0 AND expires_at > ?"),
                                    {tokenHash, nowMs});
    if (!q)
        return q.error();
    if (!q->next())
        return std::optional<SessionRecord>();
    SessionRecord s;
    s.tokenHash = q->value(0).toString();
    s.nodeId = q->value(1).toString();
    s.createdAtMs = q->value(2).toLongLong();
    s.expiresAtMs = q->value(3).toLongLong();
    s.lastHeartbeatMs = q->value(4).toLongLong();
    s.revoked = q->value(5).toInt() != 0;
    return std::optional<SessionRecord>(s);
}

Result<bool> SessionStore::hasOtherValid(const QString& nodeId, const QString& tokenHash, qint64 nowMs) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("SELECT COUNT(*) FROM sessions "
                                 "WHERE node_id = ? AND token_hash <> ? AND revoked = 0 AND expires_at > ?"),
                  {nodeId, tokenHash, nowMs});
    if (!q)
        return q.error();
    return q->next() && q->value(0).toLongLong() > 0;
}

Result<bool> SessionStore::heartbeat(const QString& tokenHash, qint64 nowMs) {
    Result<QSqlQuery> q = sql::exec(m_db.connection(),
                                    QStringLiteral("UPDATE sessions SET last_heartbeat = ? "
                                                   "WHERE token_hash = ? AND revoked = 0 AND expires_at > ?"),
                                    {nowMs, tokenHash, nowMs});
    if (!q)
        return q.error();
    return q->numRowsAffected() == 1;
}

namespace {

// Statements bind at most this many values: well under SQLite's and PostgreSQL's limits.
constexpr qsizetype kInListChunk = 500;

QString placeholders(qsizetype n) {
    QString p;
    p.reserve(n * 2);
    for (qsizetype i = 0; i < n; ++i)
        p += i ? QStringLiteral(",?") : QStringLiteral("?");
    return p;
}

} // namespace

Result<QStringList> SessionStore::heartbeatMany(const QStringList& tokenHashes, qint64 nowMs) {
    QStringList ended;
    for (qsizetype from = 0; from < tokenHashes.size(); from += kInListChunk) {
        const QStringList chunk = tokenHashes.mid(from, kInListChunk);
        QVariantList values;
        for (const QString& h : chunk)
            values << h;
        const QString in = placeholders(chunk.size());
        Result<QSqlQuery> valid = sql::exec(
            m_db.connection(),
            QStringLiteral("SELECT token_hash FROM sessions WHERE token_hash IN (%1) AND revoked = 0 AND "
                           "expires_at > ?")
                .arg(in),
            values + QVariantList{nowMs});
        if (!valid)
            return valid.error();
        QSet<QString> alive;
        while (valid->next())
            alive.insert(valid->value(0).toString());
        for (const QString& h : chunk)
            if (!alive.contains(h))
                ended << h;
        Result<QSqlQuery> q = sql::exec(
            m_db.connection(),
            QStringLiteral(
                "UPDATE sessions SET last_heartbeat = ? WHERE token_hash IN (%1) AND revoked = 0 AND "
                "expires_at > ?")
                .arg(in),
            QVariantList{nowMs} + values + QVariantList{nowMs});
        if (!q)
            return q.error();
    }
    return ended;
}

Status SessionStore::revoke(const QString& tokenHash) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(), QStringLiteral("UPDATE sessions SET revoked = 1 WHERE token_hash = ?"),
                  {tokenHash});
    if (!q)
        return q.error();
    if (q->numRowsAffected() != 1)
        return makeError("unknown session");
    return {};
}

Result<int> SessionStore::revokeNode(const QString& nodeId) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral("UPDATE sessions SET revoked = 1 WHERE node_id = ? AND revoked = 0"), {nodeId});
    if (!q)
        return q.error();
    return q->numRowsAffected();
}

Result<int> SessionStore::purge(qint64 nowMs) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("DELETE FROM sessions WHERE revoked = 1 OR expires_at <= ?"), {nowMs});
    if (!q)
        return q.error();
    return q->numRowsAffected();
}

} // namespace tessera::coordinator
