// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/CreditLedger.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

namespace {

constexpr qint64 kPageSize = 1000;

CreditReceipt readReceipt(const QSqlQuery& q) {
    CreditReceipt r;
    r.nodeId = q.value(0).toString();
    r.seq = q.value(1).toLongLong();
    r.issuedAtMs = q.value(2).toLongLong();
    r.flop = q.value(3).toLongLong();
    r.microCredits = q.value(4).toLongLong();
    r.prevHash = q.value(5).toString();
    r.hash = q.value(6).toString();
    r.signature = QByteArray::fromBase64(q.value(7).toString().toLatin1());
    return r;
}

} // namespace

Result<CreditReceipt> CreditLedger::append(const QString& nodeId, qint64 issuedAtMs, qint64 flop,
                                           qint64 microCredits, const Signer& sign) {
    if (flop < 0 || microCredits < 0)
        return makeError("a credit receipt cannot be negative");
    if (!sign)
        return makeError("a credit receipt needs a signer");
    CreditReceipt r;
    r.nodeId = nodeId;
    r.issuedAtMs = issuedAtMs;
    r.flop = flop;
    r.microCredits = microCredits;
    const QSqlDatabase db = m_db.connection();
    Status s = m_db.writeTransaction([&]() -> Status {
        // On PostgreSQL the row lock serialises appends per node (SQLite's BEGIN IMMEDIATE
        // already serialises all writers); without it a racing append would fail on the
        // (node_id, seq) key. Checking here also keeps the transaction from failing on the
        // foreign key, which PostgreSQL would answer by aborting it.
        const bool postgres = m_db.backend() == Database::Backend::Postgres;
        Result<QSqlQuery> node =
            sql::exec(db,
                      postgres ? QStringLiteral("SELECT node_id FROM nodes WHERE node_id = ? FOR UPDATE")
                               : QStringLiteral("SELECT node_id FROM nodes WHERE node_id = ?"),
                      {nodeId});
        if (!node)
            return node.error();
        if (!node->next())
            return makeError("unknown node " + nodeId.toStdString());
        Result<QSqlQuery> last = sql::exec(
            db,
            QStringLiteral(
                "SELECT seq, hash FROM credit_receipts WHERE node_id = ? ORDER BY seq DESC LIMIT 1"),
            {nodeId});
        if (!last)
            return last.error();
        const bool first = !last->next();
        r.seq = first ? 1 : last->value(0).toLongLong() + 1;
        r.prevHash = first ? kGenesisHash : last->value(1).toString();
        r.hash = r.computeHash();
        Result<QByteArray> signature = sign(r.payload());
        if (!signature)
            return makeError("cannot sign credit receipt: " + signature.message());
        r.signature = *signature;
        Result<QSqlQuery> insert = sql::exec(
            db,
            QStringLiteral("INSERT INTO credit_receipts (node_id, seq, issued_at, flop, micro_credits, "
                           "prev_hash, hash, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
            {r.nodeId, r.seq, r.issuedAtMs, r.flop, r.microCredits, r.prevHash, r.hash,
             QString::fromLatin1(r.signature.toBase64())});
        return insert ? Status() : Status(insert.error());
    });
    if (!s)
        return s.error();
    return r;
}

Result<std::vector<CreditReceipt>> CreditLedger::list(const QString& nodeId, qint64 afterSeq, int limit) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("SELECT node_id, seq, issued_at, flop, micro_credits, prev_hash, "
                                 "hash, signature FROM credit_receipts "
                                 "WHERE node_id = ? AND seq > ? ORDER BY seq LIMIT ?"),
                  {nodeId, afterSeq, qMax(limit, 0)});
    if (!q)
        return q.error();
    std::vector<CreditReceipt> receipts;
    while (q->next())
        receipts.push_back(readReceipt(*q));
    return receipts;
}

Result<CreditTotals> CreditLedger::totals(const QString& nodeId) {
    // PostgreSQL sums BIGINT into NUMERIC: cast back so both backends return an integer.
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("SELECT COUNT(*), CAST(COALESCE(SUM(micro_credits), 0) AS BIGINT), "
                                 "COALESCE(MAX(seq), 0) FROM credit_receipts WHERE node_id = ?"),
                  {nodeId});
    if (!q)
        return q.error();
    CreditTotals t;
    if (q->next()) {
        t.receipts = q->value(0).toLongLong();
        t.microCredits = q->value(1).toLongLong();
        t.lastSeq = q->value(2).toLongLong();
    }
    return t;
}

Status CreditLedger::verifyChain(const QString& nodeId) {
    qint64 expectedSeq = 1;
    QString prevHash = kGenesisHash;
    for (;;) {
        Result<std::vector<CreditReceipt>> page = list(nodeId, expectedSeq - 1, int(kPageSize));
        if (!page)
            return page.error();
        for (const CreditReceipt& r : *page) {
            const std::string where =
                "credit receipt " + std::to_string(r.seq) + " of " + nodeId.toStdString();
            if (r.seq != expectedSeq)
                return makeError(where + ": expected seq " + std::to_string(expectedSeq));
            if (r.prevHash != prevHash)
                return makeError(where + ": does not link to the receipt before it");
            if (r.hash != r.computeHash())
                return makeError(where + ": hash does not match its contents");
            prevHash = r.hash;
            ++expectedSeq;
        }
        if (qint64(page->size()) < kPageSize)
            return {};
    }
}

} // namespace tessera::coordinator
