// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/TrainingStore.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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
        // Its credit is pending (in escrow) until grantCredits() may release it.
        m_ops.push_back(
            {QStringLiteral("INSERT INTO accepted_tasks (microbatch, seq, node_id, stage, kind, tokens, "
                            "flop, accepted_at, credit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')"),
             {mb.id, seq++, t.nodeId, t.stage,
              QString(protocol::taskKindName(t.kind) + QLatin1String(t.recomputed ? "+recompute" : "")),
              t.tokens, t.flop, atMs}});
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

namespace {

// How far each node's pending work is covered by audits it passed: through the earliest of the
// times its last passed audit of each kind of work it has pending covers (reputation.audited_through
// for forwards, backward_audited_through for the rest). An honest forward does not vouch for a lying
// gradient, and a node that lies in one kind of work is not paid for the other before it is judged.
// A first stage's backward returns no tensor: its evidence is its averaging share's check where
// another replica can check it, else its audits (Trainer::onAudited decides which records it).
const char* const kCovered =
    "SELECT p.node_id, MIN(CASE WHEN p.kind = 'forward' THEN r.audited_through "
    "ELSE r.backward_audited_through END) FROM accepted_tasks p JOIN reputation r "
    "ON r.subject = 'node:' || p.node_id WHERE p.credit = 'pending' GROUP BY p.node_id";

const char* const kReleasable = "node_id = ? AND credit = 'pending' AND accepted_at <= ?";

} // namespace

Result<QStringList> TrainingStore::grantCredits(const CreditLedger::Signer& sign, qint64 nowMs,
                                                qint64 cutoffMs) {
    QStringList granted;
    Status s = m_db.writeTransaction([&]() -> Status {
        const QSqlDatabase& c = m_db.connection();
        // Each node's release time: the escrow cutoff, or earlier where its audits cover less.
        std::map<QString, qint64> through;
        Result<QSqlQuery> covered = sql::exec(c, QLatin1String(kCovered), {});
        if (!covered)
            return covered.error();
        while (covered->next())
            through[covered->value(0).toString()] = std::min(cutoffMs, covered->value(1).toLongLong());
        Result<QSqlQuery> legacy =
            sql::exec(c, QStringLiteral("SELECT node_id FROM credit_pending WHERE flop > 0"), {});
        if (!legacy)
            return legacy.error();
        while (legacy->next())
            through.emplace(legacy->value(0).toString(), std::numeric_limits<qint64>::min());
        CreditLedger ledger(m_db);
        for (const auto& [node, until] : through) {
            Result<std::optional<QVariant>> releasable = sql::scalar(
                c,
                QStringLiteral("SELECT COALESCE((SELECT SUM(flop) FROM accepted_tasks WHERE %1), 0) + "
                               "COALESCE((SELECT SUM(flop) FROM credit_pending WHERE node_id = ?), 0)")
                    .arg(QLatin1String(kReleasable)),
                {node, until, node});
            if (!releasable)
                return releasable.error();
            const qint64 flop = scalarInt(releasable);
            if (flop <= 0)
                continue;
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
            if (Result<QSqlQuery> z =
                    sql::exec(c,
                              QStringLiteral("UPDATE accepted_tasks SET credit = 'granted' WHERE %1")
                                  .arg(QLatin1String(kReleasable)),
                              {node, until});
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

namespace {

// A node's FLOPs in escrow (and in the pre-escrow credit_pending table).
Result<std::optional<QVariant>> pendingFlop(const QSqlDatabase& c, const QString& node) {
    return sql::scalar(
        c,
        QStringLiteral("SELECT COALESCE((SELECT SUM(flop) FROM accepted_tasks WHERE node_id = ? AND "
                       "credit = 'pending'), 0) + COALESCE((SELECT SUM(flop) FROM credit_pending "
                       "WHERE node_id = ?), 0)"),
        {node, node});
}

} // namespace

Result<qint64> TrainingStore::forfeit(const QString& node, const QString& reason, qint64 nowMs) {
    qint64 lost = 0;
    Status s = m_db.writeTransaction([&]() -> Status {
        const QSqlDatabase& c = m_db.connection();
        Result<std::optional<QVariant>> pending = pendingFlop(c, node);
        if (!pending)
            return pending.error();
        lost = scalarInt(pending);
        for (const char* update :
             {"UPDATE accepted_tasks SET credit = 'forfeited' WHERE node_id = ? AND credit = "
              "'pending'",
              "UPDATE credit_pending SET flop = 0 WHERE node_id = ?"})
            if (Result<QSqlQuery> q = sql::exec(c, QLatin1String(update), {node}); !q)
                return q.error();
        // One row per millisecond and node: a second forfeit in the same one adds to it.
        Result<QSqlQuery> q = sql::exec(
            c,
            QStringLiteral(
                "INSERT INTO credit_forfeits (node_id, at, flop, reason) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (node_id, at) DO UPDATE SET flop = credit_forfeits.flop + excluded.flop, "
                "reason = excluded.reason"),
            {node, nowMs, lost, reason.left(500)});
        return q ? Status() : Status(q.error());
    });
    if (!s)
        return makeError("forfeiting credit: " + s.message());
    return lost;
}

Result<CreditEscrow> TrainingStore::escrow(const QString& node) {
    const QSqlDatabase& c = m_db.connection();
    CreditEscrow e;
    Result<std::optional<QVariant>> pending = pendingFlop(c, node);
    if (!pending)
        return pending.error();
    e.pendingFlop = scalarInt(pending);
    Result<std::optional<QVariant>> lost =
        sql::scalar(c, QStringLiteral("SELECT SUM(flop) FROM credit_forfeits WHERE node_id = ?"), {node});
    if (!lost)
        return lost.error();
    e.forfeitedFlop = scalarInt(lost);
    Result<QSqlQuery> last = sql::exec(
        c,
        QStringLiteral("SELECT at, reason FROM credit_forfeits WHERE node_id = ? ORDER BY at DESC LIMIT 1"),
        {node});
    if (!last)
        return last.error();
    if (last->next()) {
        e.lastForfeitAtMs = last->value(0).toLongLong();
        e.lastForfeitReason = last->value(1).toString();
    }
    return e;
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

Result<std::vector<LossPoint>> TrainingStore::lossCurve(int maxPoints) {
    Result<QSqlQuery> span = sql::exec(
        m_db.connection(), QStringLiteral("SELECT COUNT(*), MIN(step), MAX(step) FROM loss_history"));
    if (!span)
        return span.error();
    if (!span->next() || span->value(0).toLongLong() == 0 || maxPoints < 1)
        return std::vector<LossPoint>();
    const qint64 count = span->value(0).toLongLong();
    const qint64 first = span->value(1).toLongLong();
    const qint64 last = span->value(2).toLongLong();
    span->finish();
    if (count <= maxPoints)
        return lossHistory(maxPoints);
    // Buckets of `width` consecutive steps. Both numbers are ours, not a client's; written into the
    // text so that integer division is what both backends do.
    const qint64 width = (last - first) / maxPoints + 1;
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("SELECT MAX(step), AVG(loss), MAX(tokens), MAX(at) FROM loss_history "
                                 "GROUP BY (step - %1) / %2 ORDER BY 1")
                      .arg(first)
                      .arg(width));
    if (!q)
        return q.error();
    std::vector<LossPoint> points;
    while (q->next())
        points.push_back({q->value(0).toLongLong(), q->value(1).toDouble(), q->value(2).toLongLong(),
                          q->value(3).toLongLong()});
    return points;
}

} // namespace tessera::coordinator
