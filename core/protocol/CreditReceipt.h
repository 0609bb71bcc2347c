// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditReceipt: one numbered, hash-chained credit receipt as the coordinator signs it and the
// node keeps it, and the unit credits are counted in.

#include <QByteArray>
#include <QString>
#include <QtGlobal>

namespace tessera::protocol {

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

} // namespace tessera::protocol
