// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditLedger: each node's numbered, hash-chained, signed credit receipts and their totals.

#include "base/Result.h"
#include "protocol/CreditReceipt.h"

#include <QByteArray>
#include <QString>

#include <functional>
#include <vector>

namespace tessera::coordinator {

class Database;

using protocol::CreditReceipt;
using protocol::kGenesisHash;

struct CreditTotals {
    qint64 receipts = 0;
    qint64 microCredits = 0;
    qint64 lastSeq = 0;
};

class CreditLedger final {
public:
    // Signs a receipt's payload (the coordinator's Ed25519 key, in production).
    using Signer = std::function<Result<QByteArray>(const QByteArray& payload)>;

    explicit CreditLedger(Database& db)
        : m_db(db) {}

    // Appends the node's next receipt in one transaction: seq = last + 1, prev_hash = last hash.
    // Nothing is written when signing or the insert fails. The node must be registered.
    Result<CreditReceipt> append(const QString& nodeId, qint64 issuedAtMs, qint64 flop, qint64 microCredits,
                                 const Signer& sign);
    // Receipts with seq > afterSeq, oldest first, at most limit.
    Result<std::vector<CreditReceipt>> list(const QString& nodeId, qint64 afterSeq = 0, int limit = 1000);
    Result<CreditTotals> totals(const QString& nodeId);
    // Checks the node's chain: seq from 1 without gaps, each prev_hash the hash before it, each
    // hash matching its receipt. Signatures are the caller's to check, with the public key.
    Status verifyChain(const QString& nodeId);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
