// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/Leaderboard.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

namespace {

// Each node's credit, all time and since ?, summed in SQL (PostgreSQL's SUM of a BIGINT is a NUMERIC:
// cast back).
const QString kNodeCredits =
    QStringLiteral("SELECT node_id, CAST(SUM(micro_credits) AS BIGINT) AS total,"
                   " CAST(SUM(CASE WHEN issued_at >= ? THEN micro_credits ELSE 0 END) AS BIGINT) AS recent"
                   " FROM credit_receipts GROUP BY node_id");

} // namespace

Result<std::vector<NodeStanding>> Leaderboard::topNodes(int limit, qint64 sinceMs) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral("SELECT n.node_id, n.display_name, n.team, c.total, c.recent FROM (") + kNodeCredits +
            QStringLiteral(
                ") c JOIN nodes n ON n.node_id = c.node_id ORDER BY c.total DESC, n.node_id LIMIT ?"),
        {sinceMs, limit});
    if (!q)
        return q.error();
    std::vector<NodeStanding> out;
    while (q->next())
        out.push_back({q->value(0).toString(), q->value(1).toString(), q->value(2).toString(),
                       q->value(3).toLongLong(), q->value(4).toLongLong()});
    return out;
}

Result<std::vector<TeamStanding>> Leaderboard::topTeams(int limit, qint64 sinceMs) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral("SELECT n.team, COUNT(*), CAST(COALESCE(SUM(c.total), 0) AS BIGINT) AS team_total,"
                       " CAST(COALESCE(SUM(c.recent), 0) AS BIGINT) FROM nodes n LEFT JOIN (") +
            kNodeCredits +
            QStringLiteral(") c ON c.node_id = n.node_id WHERE n.team <> '' GROUP BY n.team "
                           "ORDER BY team_total DESC, n.team LIMIT ?"),
        {sinceMs, limit});
    if (!q)
        return q.error();
    std::vector<TeamStanding> out;
    while (q->next())
        out.push_back({q->value(0).toString(), q->value(1).toLongLong(), q->value(2).toLongLong(),
                       q->value(3).toLongLong()});
    return out;
}

} // namespace tessera::coordinator
