// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/ReputationStore.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

Result<ReputationRecord> ReputationStore::get(const QString& subject) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("SELECT strikes, audits_passed, audits_failed, banned_nodes, "
                                 "banned_until, ban_reason, audited_through, backward_audited_through FROM reputation "
                                 "WHERE subject = ?"),
                  {subject});
    if (!q)
        return q.error();
    ReputationRecord r;
    r.subject = subject;
    if (q->next()) {
        r.strikes = q->value(0).toInt();
        r.auditsPassed = q->value(1).toInt();
        r.auditsFailed = q->value(2).toInt();
        r.bannedNodes = q->value(3).toInt();
        r.bannedUntilMs = q->value(4).toLongLong();
        r.banReason = q->value(5).toString();
        r.auditedThroughMs = q->value(6).toLongLong();
        r.backwardAuditedThroughMs = q->value(7).toLongLong();
    }
    return r;
}

Status ReputationStore::put(const ReputationRecord& r, qint64 nowMs) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral(
            "INSERT INTO reputation (subject, strikes, audits_passed, audits_failed, banned_nodes, "
            "banned_until, ban_reason, audited_through, backward_audited_through, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (subject) DO UPDATE SET strikes = excluded.strikes, "
            "audits_passed = excluded.audits_passed, audits_failed = excluded.audits_failed, "
            "banned_nodes = excluded.banned_nodes, banned_until = excluded.banned_until, "
            "ban_reason = excluded.ban_reason, audited_through = excluded.audited_through, "
            "backward_audited_through = excluded.backward_audited_through, "
            "updated_at = excluded.updated_at"),
        {r.subject, r.strikes, r.auditsPassed, r.auditsFailed, r.bannedNodes, r.bannedUntilMs,
         r.banReason.isEmpty() ? QStringLiteral("") : r.banReason.left(500), r.auditedThroughMs,
         r.backwardAuditedThroughMs, nowMs});
    return q ? Status() : Status(q.error());
}

} // namespace tessera::coordinator
