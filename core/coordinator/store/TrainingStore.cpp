#include "coordinator/store/TrainingStore.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

#include <cmath>

namespace tessera::coordinator {

namespace {

qint64 scalarInt(const Result<std::optional<QVariant>>& r) {
    return r && *r ? (*r)->toLongLong() : 0;
}

} // namespace

Result<TrainingState> TrainingStore::resume(qint64 nowMs) {
    TrainingState state;
    Status s = m_db.writeTransaction([&]() -> Status {
        const QSqlDatabase& c = m_db.connection();
        Result<QSqlQuery> q =
            sql::exec(c,
                      QStringLiteral(
                          "UPDATE microbatches SET state = 'abandoned', finished_at = ?, "
                          "reason = 'the coordinator stopped before it completed' WHERE state = 'in_flight'"),
                      {nowMs});
        if (!q)
            return q.error();
        state.abandonedAtStart = q->numRowsAffected();
        q = sql::exec(c,
                      QStringLiteral("SELECT step, tokens, joins, leaves FROM training_state WHERE id = 1"));
        if (!q)
            return q.error();
        if (q->next()) {
            state.step = q->value(0).toLongLong();
            state.tokens = q->value(1).toLongLong();
            state.joins = q->value(2).toLongLong();
            state.leaves = q->value(3).toLongLong();
        }
        q = sql::exec(c, QStringLiteral("SELECT state, COUNT(*) FROM microbatches GROUP BY state"));
        if (!q)
            return q.error();
        while (q->next()) {
            const QString st = q->value(0).toString();
            const qint64 n = q->value(1).toLongLong();
            state.issued += n;
            if (st == u"completed")
                state.completed += n;
            else if (st == u"abandoned")
                state.abandoned += n;
        }
        Result<std::optional<QVariant>> maxId =
            sql::scalar(c, QStringLiteral("SELECT MAX(id) FROM microbatches"));
        if (!maxId)
            return maxId.error();
        state.nextMicrobatch = scalarInt(maxId) + 1;
        // Tokens trained are the completed microbatches' (training_state lags by a step).
        Result<std::optional<QVariant>> tokens =
            sql::scalar(c, QStringLiteral("SELECT SUM(tokens) FROM microbatches WHERE state = 'completed'"));
        if (!tokens)
            return tokens.error();
        state.tokens = scalarInt(tokens);
        Result<std::optional<QVariant>> flop =
            sql::scalar(c, QStringLiteral("SELECT SUM(flop) FROM accepted_tasks"));
        if (!flop)
            return flop.error();
        state.creditedFlop = scalarInt(flop);
        return {};
    });
    if (!s)
        return makeError("resuming the training state: " + s.message());
    return state;
}

void TrainingStore::issued(qint64 microbatch, qint64 step, qint64 tokens, qint64 atMs) {
    m_ops.push_back({QStringLiteral("INSERT INTO microbatches (id, step, state, tokens, issued_at) "
                                    "VALUES (?, ?, 'in_flight', ?, ?)"),
                     {microbatch, step, tokens, atMs}});
}

void TrainingStore::completed(const Microbatch& mb, qint64 atMs) {
    m_ops.push_back({QStringLiteral("UPDATE microbatches SET state = 'completed', finished_at = ?, loss = ? "
                                    "WHERE id = ?"),
                     {atMs, std::isfinite(mb.loss) ? QVariant(mb.loss) : QVariant(), mb.id}});
    int seq = 0;
    for (const AcceptedTask& t : mb.accepted) {
        m_ops.push_back(
            {QStringLiteral("INSERT INTO accepted_tasks (microbatch, seq, node_id, stage, kind, tokens, "
                            "flop) VALUES (?, ?, ?, ?, ?, ?, ?)"),
             {mb.id, seq++, t.nodeId, t.stage,
              QString(protocol::taskKindName(t.kind) + QLatin1String(t.recomputed ? "+recompute" : "")),
              t.tokens, t.flop}});
        // Upsert without backend-specific syntax: insert a zero row when none, then add.
        m_ops.push_back(
            {QStringLiteral("INSERT INTO credit_pending (node_id, flop) SELECT ?, 0 WHERE NOT EXISTS "
                            "(SELECT 1 FROM credit_pending WHERE node_id = ?) AND EXISTS "
                            "(SELECT 1 FROM nodes WHERE node_id = ?)"),
             {t.nodeId, t.nodeId, t.nodeId}});
        m_ops.push_back({QStringLiteral("UPDATE credit_pending SET flop = flop + ? WHERE node_id = ?"),
                         {t.flop, t.nodeId}});
    }
}

void TrainingStore::abandoned(const Microbatch& mb, qint64 atMs) {
    m_ops.push_back(
        {QStringLiteral("UPDATE microbatches SET state = 'abandoned', finished_at = ?, reason = ? "
                        "WHERE id = ?"),
         {atMs, mb.abandonReason.left(500), mb.id}});
}

void TrainingStore::saveState(qint64 step, const TrainingState& state, qint64 atMs) {
    m_ops.push_back({QStringLiteral("DELETE FROM training_state WHERE id = 1"), {}});
    m_ops.push_back(
        {QStringLiteral("INSERT INTO training_state (id, step, tokens, joins, leaves, updated_at) "
                        "VALUES (1, ?, ?, ?, ?, ?)"),
         {step, state.tokens, state.joins, state.leaves, atMs}});
}

void TrainingStore::stepped(qint64 step, double loss, const TrainingState& state, qint64 atMs) {
    saveState(step, state, atMs);
    if (std::isfinite(loss)) {
        m_ops.push_back({QStringLiteral("DELETE FROM loss_history WHERE step = ?"), {step}});
        m_ops.push_back(
            {QStringLiteral("INSERT INTO loss_history (step, loss, tokens, at) VALUES (?, ?, ?, ?)"),
             {step, loss, state.tokens, atMs}});
    }
}

Status TrainingStore::flush() {
    if (m_ops.empty())
        return {};
    Status s = m_db.writeTransaction([&]() -> Status {
        for (const Op& op : m_ops)
            if (Result<QSqlQuery> q = sql::exec(m_db.connection(), op.sql, op.values); !q)
                return q.error();
        return {};
    });
    if (s)
        m_ops.clear();
    return s;
}

Result<QStringList> TrainingStore::grantCredits(const CreditLedger::Signer& sign, qint64 nowMs) {
    QStringList granted;
    Status s = m_db.writeTransaction([&]() -> Status {
        const QSqlDatabase& c = m_db.connection();
        Result<QSqlQuery> q = sql::exec(
            c, QStringLiteral("SELECT node_id, flop FROM credit_pending WHERE flop > 0 ORDER BY node_id"));
        if (!q)
            return q.error();
        std::vector<std::pair<QString, qint64>> pending;
        while (q->next())
            pending.emplace_back(q->value(0).toString(), q->value(1).toLongLong());
        CreditLedger ledger(m_db);
        for (const auto& [node, flop] : pending) {
            Result<std::optional<QVariant>> before = sql::scalar(
                c, QStringLiteral("SELECT SUM(flop) FROM credit_receipts WHERE node_id = ?"), {node});
            if (!before)
                return before.error();
            const qint64 had = scalarInt(before);
            const qint64 micro =
                (had + flop) / protocol::kFlopPerMicroCredit - had / protocol::kFlopPerMicroCredit;
            if (Result<CreditReceipt> r = ledger.append(node, nowMs, flop, micro, sign); !r)
                return r.error();
            if (Result<QSqlQuery> z = sql::exec(
                    c, QStringLiteral("UPDATE credit_pending SET flop = 0 WHERE node_id = ?"), {node});
                !z)
                return z.error();
            granted << node;
        }
        return {};
    });
    if (!s)
        return makeError("granting credits: " + s.message());
    return granted;
}

Result<std::vector<LossPoint>> TrainingStore::lossHistory(int maxPoints) {
    Result<QSqlQuery> q = sql::exec(m_db.connection(),
                                    QStringLiteral("SELECT step, loss, tokens, at FROM loss_history "
                                                   "ORDER BY step DESC LIMIT ?"),
                                    {maxPoints});
    if (!q)
        return q.error();
    std::vector<LossPoint> points;
    while (q->next())
        points.push_back({q->value(0).toLongLong(), q->value(1).toDouble(), q->value(2).toLongLong(),
                          q->value(3).toLongLong()});
    std::reverse(points.begin(), points.end());
    return points;
}

} // namespace tessera::coordinator
