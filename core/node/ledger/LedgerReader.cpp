// SPDX-License-Identifier: Apache-2.0
// LedgerReader: a read-only SQLite connection of its own for each call, removed afterwards.
#include "node/ledger/LedgerReader.h"

#include <QFileInfo>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>
#include <QVariantList>

#include <atomic>
#include <optional>

namespace tessera::node {

namespace {

// A reader waits this long when SQLite is busy (recovering the WAL after a crash of the node).
constexpr int kBusyTimeoutMs = 2000;

std::string text(const QString& s) {
    return s.toStdString();
}

// The ledger opened read-only under a connection name of its own (so that calls from several
// threads never share one), removed again when it goes.
class Connection final {
public:
    explicit Connection(const QString& path)
        : m_path(path) {
        static std::atomic<quint64> counter{0};
        m_name = QStringLiteral("tessera-ledger-reader-%1").arg(counter.fetch_add(1) + 1);
        m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_name);
        m_db.setDatabaseName(path);
        // Read-only: the node owns the file. WAL mode lets this reader see every committed
        // receipt while the node writes, without ever blocking it.
        m_db.setConnectOptions(
            QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=%1").arg(kBusyTimeoutMs));
    }
    ~Connection() {
        m_db.close();
        m_db = QSqlDatabase(); // every handle must be gone before Qt forgets the name
        QSqlDatabase::removeDatabase(m_name);
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // True when the receipts table is there; false for a database the node has only just created
    // (no tables yet).
    Result<bool> open() {
        if (!m_db.open())
            return fail(m_db.lastError());
        QSqlQuery q(m_db);
        if (!q.exec(QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table'")))
            return fail(q.lastError());
        QStringList tables;
        while (q.next())
            tables.append(q.value(0).toString());
        if (tables.contains(u"receipts"))
            return true;
        if (tables.isEmpty())
            return false;
        return makeError(text(m_path) + " is not a tessera-node ledger (it has no receipts table)");
    }

    Result<QSqlQuery> query(const QString& statement, const QVariantList& values) {
        QSqlQuery q(m_db);
        q.setForwardOnly(true);
        if (!q.prepare(statement))
            return fail(q.lastError());
        for (const QVariant& v : values)
            q.addBindValue(v);
        if (!q.exec())
            return fail(q.lastError());
        return q;
    }

private:
    Error fail(const QSqlError& e) const {
        QString why = e.databaseText().trimmed();
        if (why.isEmpty())
            why = e.text().trimmed();
        return makeError("cannot read the credit ledger " + text(m_path) + ": " + text(why) +
                         " (it may be damaged; check it with `tessera-node ledger verify`)");
    }

    QString m_path;
    QString m_name;
    QSqlDatabase m_db;
};

// Runs `statement` on the ledger, or nothing (nullopt) when there is no ledger with receipts yet.
Result<std::optional<QSqlQuery>> run(Connection& ledger, const QString& path, const QString& statement,
                                     const QVariantList& values) {
    if (!QFileInfo::exists(path))
        return std::optional<QSqlQuery>();
    Result<bool> hasReceipts = ledger.open();
    if (!hasReceipts)
        return hasReceipts.error();
    if (!*hasReceipts)
        return std::optional<QSqlQuery>();
    Result<QSqlQuery> q = ledger.query(statement, values);
    if (!q)
        return q.error();
    return std::optional<QSqlQuery>(std::move(*q));
}

} // namespace

Result<std::vector<MinuteCredits>> LedgerReader::creditsPerMinute(const QString& ledgerPath, qint64 fromMs,
                                                                  qint64 toMs) {
    Connection ledger(ledgerPath);
    Result<std::optional<QSqlQuery>> q = run(
        ledger, ledgerPath,
        QStringLiteral(
            "SELECT issued_at / 60000, SUM(micro_credits), COUNT(*) FROM receipts WHERE issued_at >= ? AND "
            "issued_at < ? GROUP BY 1 ORDER BY 1"),
        {fromMs, toMs});
    if (!q)
        return q.error();
    std::vector<MinuteCredits> out;
    if (*q)
        while ((*q)->next())
            out.push_back(
                {(*q)->value(0).toLongLong(), (*q)->value(1).toLongLong(), (*q)->value(2).toLongLong()});
    return out;
}

Result<LedgerSummary> LedgerReader::summary(const QString& ledgerPath, qint64 sinceMs) {
    Connection ledger(ledgerPath);
    // TOTAL(flop) is a double: an integer SUM would fail once the FLOP pass 2^63.
    Result<std::optional<QSqlQuery>> q =
        run(ledger, ledgerPath,
            QStringLiteral(
                "SELECT COUNT(*), COALESCE(SUM(micro_credits), 0), TOTAL(flop), "
                "COALESCE(SUM(CASE WHEN issued_at >= ? THEN micro_credits ELSE 0 END), 0) FROM receipts"),
            {sinceMs});
    if (!q)
        return q.error();
    LedgerSummary s;
    if (*q && (*q)->next()) {
        s.receipts = (*q)->value(0).toLongLong();
        s.microCredits = (*q)->value(1).toLongLong();
        s.flop = (*q)->value(2).toDouble();
        s.microCreditsSince = (*q)->value(3).toLongLong();
    }
    return s;
}

} // namespace tessera::node
