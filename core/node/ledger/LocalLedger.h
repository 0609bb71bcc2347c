// SPDX-License-Identifier: Apache-2.0
#pragma once
// LocalLedger: the node's own copy of its credit receipts, each checked before it is kept.
//
// One SQLite file (ledger.sqlite in the data dir) that belongs to one node id and one
// coordinator key, both written into its meta table on first open. Every receipt is checked
// against that key and the chain before it is stored, so the file always holds a valid prefix
// of the coordinator's chain; verify() re-checks it all offline. A LocalLedger belongs to the
// thread that opened it (Qt SQL connections must not cross threads).

#include "base/Result.h"
#include "protocol/CreditReceipt.h"

#include <QByteArray>
#include <QJsonObject>
#include <QSqlDatabase>
#include <QString>

#include <memory>
#include <vector>

class QIODevice;

namespace tessera::node {

using protocol::CreditReceipt;

inline const QString kLedgerFileName = QStringLiteral("ledger.sqlite");

struct IngestResult {
    qint64 stored = 0;     // new receipts written
    qint64 duplicates = 0; // receipts already held with identical content, skipped
    qint64 lastSeq = 0;    // the ledger's last seq afterwards
};

struct LedgerTotals {
    qint64 receipts = 0;
    qint64 microCredits = 0;
    // Approximate: summed FLOP passes 2^63 after hours of a fast GPU, so only micro-credits
    // (10^9 FLOP each) are exact.
    double flop = 0;
    qint64 lastSeq = 0;
};

struct VerifyReport {
    qint64 checked = 0;  // receipts found valid (before the problem, if any)
    LedgerTotals totals; // over the receipts checked
    QString problem;     // empty when the whole ledger is valid
    bool ok() const { return problem.isEmpty(); }
};

// "12.345678": micro-credits shown as credits, exactly, with 6 decimals.
QString formatCredits(qint64 microCredits);

class LocalLedger final {
public:
    static constexpr int kSchemaVersion = 1;

    // Opens (creating on first use) the ledger at path for this node and coordinator key (raw
    // 32 bytes). A ledger written for another node or key, or by a newer tessera-node, is refused.
    static Result<std::unique_ptr<LocalLedger>> open(const QString& path, const QString& nodeId,
                                                     const QByteArray& coordinatorPublicKey);
    // Opens an existing ledger as it is, trusting the node id and key in its meta table (for
    // `tessera-node ledger verify` and `export`, offline). A missing file is an error.
    static Result<std::unique_ptr<LocalLedger>> openExisting(const QString& path);

    ~LocalLedger();
    LocalLedger(const LocalLedger&) = delete;
    LocalLedger& operator=(const LocalLedger&) = delete;

    const QString& path() const { return m_path; }
    const QString& nodeId() const { return m_nodeId; }
    // A ledger whose creation was cut short (the node killed between opening the file and committing its
    // schema): a database with nothing in it. It holds no receipt — nothing was lost — and verifies as such;
    // the node writes its schema on its next start (openExisting only: open() creates it).
    bool unwritten() const { return m_unwritten; }
    const QByteArray& coordinatorKey() const { return m_coordinatorKey; }

    // Checks each receipt in order (node id, seq == last + 1, prev_hash == last hash, hash,
    // the coordinator's signature) and stores the valid prefix in one transaction. A receipt
    // already held with identical content is skipped; one that differs is an error. The first
    // invalid receipt ends the batch: the error names its seq and what is wrong with it.
    Result<IngestResult> ingest(const std::vector<CreditReceipt>& receipts);

    Result<LedgerTotals> totals();
    // The node's status fields credits_total and ledger_receipts (zeros without a ledger, or when
    // it cannot be read).
    static void addTotalsTo(LocalLedger* ledger, QJsonObject& status);
    // Receipts with seq > afterSeq, oldest first, at most limit.
    Result<std::vector<CreditReceipt>> list(qint64 afterSeq = 0, int limit = 1000);

    // PRAGMA integrity_check, then the whole chain (seq without gaps, prev links, hashes,
    // signatures). An error only when the ledger cannot be read; a bad ledger is a report
    // whose problem names the first bad receipt.
    Result<VerifyReport> verify();

    // CSV (RFC 4180, CRLF line ends): a header, then one line per receipt, oldest first.
    Status exportCsv(QIODevice& out);

private:
    LocalLedger(QString path, QString connectionName);
    static Result<std::unique_ptr<LocalLedger>> connect(const QString& path);
    Status createOrCheckSchema(const QString& nodeId, const QByteArray& coordinatorKey);
    Status readMeta();
    Result<QString> checkNew(const CreditReceipt& r, qint64 lastSeq, const QString& lastHash) const;

    QString m_path;
    QString m_connectionName;
    QSqlDatabase m_db;
    QString m_nodeId;
    QByteArray m_coordinatorKey;
    bool m_unwritten = false;
};

} // namespace tessera::node
