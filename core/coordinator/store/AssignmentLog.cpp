// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/AssignmentLog.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

Status AssignmentLog::assign(const QString& nodeId, int stage, qint64 nowMs) {
    Result<QSqlQuery> ended = sql::exec(
        m_db.connection(),
        QStringLiteral("UPDATE assignments SET ended_at = ? WHERE node_id = ? AND ended_at IS NULL"),
        {nowMs, nodeId});
    if (!ended)
        return ended.error();
    Result<std::optional<QVariant>> last =
        sql::scalar(m_db.connection(), QStringLiteral("SELECT MAX(id) FROM assignments"));
    if (!last)
        return last.error();
    const qint64 id = (*last && !(*last)->isNull() ? (*last)->toLongLong() : 0) + 1;
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral(
            "INSERT INTO assignments (id, node_id, stage, assigned_at, ended_at) VALUES (?, ?, ?, ?, NULL)"),
        {id, nodeId, stage, nowMs});
    return q ? Status() : Status(q.error());
}

Result<std::optional<AssignmentRecord>> AssignmentLog::current(const QString& nodeId) {
    Result<QSqlQuery> q = sql::exec(m_db.connection(),
                                    QStringLiteral("SELECT id, node_id, stage, assigned_at FROM assignments "
                                                   "WHERE node_id = ? AND ended_at IS NULL ORDER BY id DESC"),
                                    {nodeId});
    if (!q)
        return q.error();
    if (!q->next())
        return std::optional<AssignmentRecord>();
    AssignmentRecord r;
    r.id = q->value(0).toLongLong();
    r.nodeId = q->value(1).toString();
    r.stage = q->value(2).toInt();
    r.assignedAtMs = q->value(3).toLongLong();
    return std::optional<AssignmentRecord>(r);
}

} // namespace tessera::coordinator
