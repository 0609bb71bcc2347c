// SPDX-License-Identifier: Apache-2.0
#include "SwarmDatabase.h"

#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QUuid>
#include <QVariant>

SwarmDatabase::SwarmDatabase(const QString& sqliteFile)
    : m_connection(QStringLiteral("swarm-") + QUuid::createUuid().toString(QUuid::WithoutBraces)) {
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
    db.setDatabaseName(sqliteFile);
    m_open = db.open();
    if (!m_open)
        m_error = db.lastError().text();
}

SwarmDatabase::~SwarmDatabase() {
    {
        QSqlDatabase db = QSqlDatabase::database(m_connection, false);
        db.close();
    }
    QSqlDatabase::removeDatabase(m_connection);
}

bool SwarmDatabase::query(const QString& sql, const std::function<void(const QSqlQuery&)>& row) {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    if (!q.exec(sql)) {
        m_error = sql + QStringLiteral(": ") + q.lastError().text();
        return false;
    }
    while (q.next())
        row(q);
    return true;
}

bool SwarmDatabase::microbatches(MicrobatchAccount& out) {
    out = {};
    const bool states = query(QStringLiteral("SELECT state, COUNT(*) FROM microbatches GROUP BY state"),
                              [&](const QSqlQuery& q) {
                                  const QString state = q.value(0).toString();
                                  const qint64 n = q.value(1).toLongLong();
                                  out.issued += n;
                                  if (state == u"completed")
                                      out.completed += n;
                                  else if (state == u"abandoned")
                                      out.abandoned += n;
                                  else if (state == u"in_flight")
                                      out.inFlight += n;
                                  else
                                      out.otherState += n;
                              });
    return states &&
           query(QStringLiteral(
                     "SELECT COALESCE(reason, ''), COUNT(*) FROM microbatches WHERE state = 'abandoned' "
                     "GROUP BY reason"),
                 [&](const QSqlQuery& q) {
                     const QString reason = q.value(0).toString();
                     if (reason.trimmed().isEmpty())
                         out.abandonedWithoutReason += q.value(1).toLongLong();
                     else
                         out.abandonReasons[reason] += q.value(1).toLongLong();
                 });
}

bool SwarmDatabase::credits(CreditAccount& out) {
    out = {};
    return query(QStringLiteral("SELECT node_id, COUNT(*), SUM(flop) FROM accepted_tasks GROUP BY node_id"),
                 [&](const QSqlQuery& q) {
                     out.acceptedTasks += q.value(1).toLongLong();
                     out.acceptedFlop += q.value(2).toLongLong();
                     out.nodes[q.value(0).toString()].acceptedFlop = q.value(2).toLongLong();
                 }) &&
           query(QStringLiteral("SELECT node_id, COUNT(*), SUM(flop), SUM(micro_credits), MIN(seq), MAX(seq) "
                                "FROM credit_receipts GROUP BY node_id"),
                 [&](const QSqlQuery& q) {
                     NodeCredit& n = out.nodes[q.value(0).toString()];
                     n.receipts = q.value(1).toLongLong();
                     n.receiptFlop = q.value(2).toLongLong();
                     n.microCredits = q.value(3).toLongLong();
                     n.firstSeq = q.value(4).toLongLong();
                     n.lastSeq = q.value(5).toLongLong();
                     out.receipts += n.receipts;
                     out.receiptFlop += n.receiptFlop;
                 }) &&
           query(QStringLiteral("SELECT node_id, credit, SUM(flop) FROM accepted_tasks WHERE credit IN "
                                "('pending', 'forfeited') GROUP BY node_id, credit"),
                 [&](const QSqlQuery& q) {
                     const qint64 flop = q.value(2).toLongLong();
                     NodeCredit& n = out.nodes[q.value(0).toString()];
                     if (q.value(1).toString() == u"pending") {
                         n.pendingFlop += flop;
                         out.pendingFlop += flop;
                     } else {
                         n.forfeitedFlop += flop;
                         out.forfeitedFlop += flop;
                     }
                 }) &&
           query(QStringLiteral("SELECT node_id, flop, reason FROM credit_forfeits ORDER BY at"),
                 [&](const QSqlQuery& q) {
                     out.forfeitReasons << QStringLiteral("%1: %2 FLOP: %3")
                                               .arg(q.value(0).toString().left(12))
                                               .arg(q.value(1).toLongLong())
                                               .arg(q.value(2).toString());
                 });
}

bool SwarmDatabase::checkpoints(int stages, QMap<int, StageCheckpoints>& out) {
    out.clear();
    for (int s = 0; s < stages; ++s)
        out[s] = {};
    return query(QStringLiteral("SELECT stage, MAX(step), SUM(CASE WHEN step > 0 THEN 1 ELSE 0 END) "
                                "FROM stage_versions GROUP BY stage"),
                 [&](const QSqlQuery& q) {
                     out[q.value(0).toInt()] = {q.value(1).toLongLong(), q.value(2).toLongLong()};
                 });
}

bool SwarmDatabase::trainingState(qint64& step, qint64& tokens, qint64& joins, qint64& leaves) {
    step = tokens = joins = leaves = -1;
    return query(QStringLiteral("SELECT step, tokens, joins, leaves FROM training_state WHERE id = 1"),
                 [&](const QSqlQuery& q) {
                     step = q.value(0).toLongLong();
                     tokens = q.value(1).toLongLong();
                     joins = q.value(2).toLongLong();
                     leaves = q.value(3).toLongLong();
                 });
}
