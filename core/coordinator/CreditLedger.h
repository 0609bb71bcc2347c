#pragma once
// CreditLedger: each node's numbered, hash-chained, signed credit receipts and their totals.

#include "Result.h"

#include <QByteArray>
#include <QString>

#include <functional>
#include <vector>

namespace tessera::coordinator {

class Database;

// Credits are counted in integer micro-credits: 1 credit = 10^15 FLOP, so 1 micro-credit =
// 10^9 FLOP. Integers keep sums exact on both backends, where floating point would drift.
inline constexpr qint64 kFlopPerMicroCredit = 1'000'000'000;
inline constexpr qint64 kMicroCreditsPerCredit = 1'000'000;

struct CreditReceipt {
    QString nodeId;
    qint64 seq = 0; // 1, 2, 3, ... per node, without gaps
    qint64 issuedAtMs = 0;
    qint64 flop = 0;
    qint64 microCredits = 0;
    QString prevHash;     // the previous receipt's hash; kGenesisHash for seq 1
    QString hash;         // SHA-256 of payload(), lowercase hex
    QByteArray signature; // the coordinator's signature of payload()

    // What is hashed and signed, UTF-8 lines:
    // "tessera-credit-receipt-v1\nnode_id=…\nseq=…\nissued_at=…\nflop=…\nmicro_credits=…\nprev_hash=…"
    QByteArray payload() const;
    QString computeHash() const;
};

inline const QString kGenesisHash = QString(64, u'0');

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
