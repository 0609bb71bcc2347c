// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/NodeRegistry.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

namespace {

const QString kColumns = QStringLiteral("node_id, public_key, first_seen, last_seen, state, hardware_json, "
                                        "bench_json, client_version, stage, network, display_name, team");

NodeRecord readNode(const QSqlQuery& q) {
    NodeRecord n;
    n.nodeId = q.value(0).toString();
    n.publicKey = q.value(1).toString();
    n.firstSeenMs = q.value(2).toLongLong();
    n.lastSeenMs = q.value(3).toLongLong();
    n.state =
        q.value(4).toString() == nodeStateName(NodeState::Online) ? NodeState::Online : NodeState::Offline;
    n.hardwareJson = q.value(5).toString();
    n.benchJson = q.value(6).toString();
    n.clientVersion = q.value(7).toString();
    n.stage = sql::optionalInt(q.value(8));
    n.network = q.value(9).toString();
    n.displayName = q.value(10).toString();
    n.team = q.value(11).toString();
    return n;
}

// The WHERE clause is chosen among fixed texts; only the values are bound.
QString whereClause(std::optional<NodeState> state, std::optional<int> stage, QVariantList& values) {
    QStringList conditions;
    if (state) {
        conditions << QStringLiteral("state = ?");
        values << nodeStateName(*state);
    }
    if (stage) {
        conditions << QStringLiteral("stage = ?");
        values << *stage;
    }
    return conditions.isEmpty() ? QString()
                                : QStringLiteral(" WHERE ") + conditions.join(QStringLiteral(" AND "));
}

} // namespace

QString nodeStateName(NodeState state) {
    switch (state) {
    case NodeState::Online:
        return QStringLiteral("online");
    case NodeState::Offline:
        return QStringLiteral("offline");
    }
    return QStringLiteral("offline");
}

Status NodeRegistry::admit(const NodeAdmission& a, qint64 nowMs) {
    // A null QString binds as SQL NULL: the NOT NULL text columns get '' instead.
    const auto text = [](const QString& s) { return s.isNull() ? QStringLiteral("") : s; };
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral("INSERT INTO nodes (node_id, public_key, first_seen, last_seen, state, hardware_json, "
                       "bench_json, client_version, stage, bench_gflops, network, display_name, team) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?) "
                       "ON CONFLICT (node_id) DO UPDATE SET public_key = excluded.public_key, "
                       "last_seen = excluded.last_seen, state = excluded.state, "
                       "hardware_json = excluded.hardware_json, bench_json = excluded.bench_json, "
                       "client_version = excluded.client_version, bench_gflops = excluded.bench_gflops, "
                       "network = excluded.network, display_name = excluded.display_name, "
                       "team = excluded.team"),
        {a.nodeId, a.publicKey, nowMs, nowMs, nodeStateName(NodeState::Online), a.hardwareJson, a.benchJson,
         a.clientVersion, a.benchGflops, text(a.network), text(a.displayName), text(a.team)});
    return q ? Status() : Status(q.error());
}

Status NodeRegistry::updateOne(const QString& nodeId, const QString& statement, const QVariantList& values) {
    Result<QSqlQuery> q = sql::exec(m_db.connection(), statement, values);
    if (!q)
        return q.error();
    if (q->numRowsAffected() != 1)
        return makeError("unknown node " + nodeId.toStdString());
    return {};
}

Status NodeRegistry::setState(const QString& nodeId, NodeState state, qint64 nowMs) {
    return updateOne(nodeId, QStringLiteral("UPDATE nodes SET state = ?, last_seen = ? WHERE node_id = ?"),
                     {nodeStateName(state), nowMs, nodeId});
}

Status NodeRegistry::setStage(const QString& nodeId, std::optional<int> stage) {
    return updateOne(nodeId, QStringLiteral("UPDATE nodes SET stage = ? WHERE node_id = ?"),
                     {sql::nullable(stage), nodeId});
}

Status NodeRegistry::touch(const QString& nodeId, qint64 nowMs) {
    return updateOne(nodeId, QStringLiteral("UPDATE nodes SET last_seen = ? WHERE node_id = ?"),
                     {nowMs, nodeId});
}

Status NodeRegistry::touchMany(const QStringList& nodeIds, qint64 nowMs) {
    constexpr qsizetype kChunk = 500;
    for (qsizetype from = 0; from < nodeIds.size(); from += kChunk) {
        const QStringList chunk = nodeIds.mid(from, kChunk);
        QVariantList values{nowMs};
        QString in;
        for (const QString& id : chunk) {
            values << id;
            in += in.isEmpty() ? QStringLiteral("?") : QStringLiteral(",?");
        }
        Result<QSqlQuery> q =
            sql::exec(m_db.connection(),
                      QStringLiteral("UPDATE nodes SET last_seen = ? WHERE node_id IN (%1)").arg(in), values);
        if (!q)
            return q.error();
    }
    return {};
}

Result<int> NodeRegistry::markStaleOffline(qint64 cutoffMs) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(), QStringLiteral("UPDATE nodes SET state = ? WHERE state = ? AND last_seen < ?"),
        {nodeStateName(NodeState::Offline), nodeStateName(NodeState::Online), cutoffMs});
    if (!q)
        return q.error();
    return q->numRowsAffected();
}

Result<qint64> NodeRegistry::onlineFromNetwork(const QString& network, const QString& except) {
    Result<std::optional<QVariant>> n = sql::scalar(
        m_db.connection(),
        QStringLiteral("SELECT COUNT(*) FROM nodes WHERE state = ? AND network = ? AND node_id <> ?"),
        {nodeStateName(NodeState::Online), network, except});
    if (!n)
        return n.error();
    return *n ? (*n)->toLongLong() : 0;
}

Result<std::optional<NodeRecord>> NodeRegistry::find(const QString& nodeId) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral("SELECT ") + kColumns + QStringLiteral(" FROM nodes WHERE node_id = ?"), {nodeId});
    if (!q)
        return q.error();
    if (!q->next())
        return std::optional<NodeRecord>();
    return std::optional<NodeRecord>(readNode(*q));
}

Result<std::vector<NodeRecord>> NodeRegistry::list(std::optional<NodeState> state, std::optional<int> stage) {
    QVariantList values;
    const QString where = whereClause(state, stage, values);
    Result<QSqlQuery> q = sql::exec(m_db.connection(),
                                    QStringLiteral("SELECT ") + kColumns + QStringLiteral(" FROM nodes") +
                                        where + QStringLiteral(" ORDER BY node_id"),
                                    values);
    if (!q)
        return q.error();
    std::vector<NodeRecord> nodes;
    while (q->next())
        nodes.push_back(readNode(*q));
    return nodes;
}

Result<qint64> NodeRegistry::count(std::optional<NodeState> state, std::optional<int> stage) {
    QVariantList values;
    const QString where = whereClause(state, stage, values);
    Result<std::optional<QVariant>> v =
        sql::scalar(m_db.connection(), QStringLiteral("SELECT COUNT(*) FROM nodes") + where, values);
    if (!v)
        return v.error();
    return *v ? (*v)->toLongLong() : qint64(0);
}

Result<std::vector<StageTotals>> NodeRegistry::stageTotals(const QString& exceptNodeId) {
    Result<QSqlQuery> q = sql::exec(
        m_db.connection(),
        QStringLiteral(
            "SELECT stage, COUNT(*), SUM(bench_gflops) FROM nodes "
            "WHERE state = ? AND stage IS NOT NULL AND node_id <> ? GROUP BY stage ORDER BY stage"),
        // A null QString binds as SQL NULL, and `node_id <> NULL` matches nothing.
        {nodeStateName(NodeState::Online), exceptNodeId.isNull() ? QStringLiteral("") : exceptNodeId});
    if (!q)
        return q.error();
    std::vector<StageTotals> out;
    while (q->next())
        out.push_back({q->value(0).toInt(), q->value(1).toLongLong(), q->value(2).toDouble()});
    return out;
}

Result<std::vector<OnlineNode>> NodeRegistry::onlineByStage(int perStage) {
    // Each node's credits from its own receipts (the primary key's prefix), ranked within its stage;
    // ROW_NUMBER() runs on SQLite (3.25+) and PostgreSQL alike.
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral(
                      "SELECT node_id, stage, display_name, team, bench_gflops, credits FROM ("
                      " SELECT n.node_id, n.stage, n.display_name, n.team, n.bench_gflops, n.credits,"
                      "  ROW_NUMBER() OVER (PARTITION BY n.stage ORDER BY n.credits DESC, n.node_id) AS place"
                      " FROM (SELECT node_id, stage, display_name, team, bench_gflops,"
                      "  (SELECT CAST(COALESCE(SUM(r.micro_credits), 0) AS BIGINT) FROM credit_receipts r"
                      "   WHERE r.node_id = nodes.node_id) AS credits"
                      "  FROM nodes WHERE state = ? AND stage IS NOT NULL) n) ranked "
                      "WHERE place <= ? ORDER BY stage, place"),
                  {nodeStateName(NodeState::Online), perStage});
    if (!q)
        return q.error();
    std::vector<OnlineNode> out;
    while (q->next())
        out.push_back({q->value(0).toString(), q->value(1).toInt(), q->value(2).toString(),
                       q->value(3).toString(), q->value(4).toDouble(), q->value(5).toLongLong()});
    return out;
}

} // namespace tessera::coordinator
