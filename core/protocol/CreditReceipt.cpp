// SPDX-License-Identifier: Apache-2.0
// CreditReceipt: the signed text of a receipt and its hash.
#include "protocol/CreditReceipt.h"

#include <QCryptographicHash>

namespace tessera::protocol {

QByteArray CreditReceipt::payload() const {
    return QString(QStringLiteral("tessera-credit-receipt-v1\nnode_id=") + nodeId + QStringLiteral("\nseq=") +
                   QString::number(seq) + QStringLiteral("\nissued_at=") + QString::number(issuedAtMs) +
                   QStringLiteral("\nflop=") + QString::number(flop) + QStringLiteral("\nmicro_credits=") +
                   QString::number(microCredits) + QStringLiteral("\nprev_hash=") + prevHash)
        .toUtf8();
}

QString CreditReceipt::computeHash() const {
    return QString::fromLatin1(QCryptographicHash::hash(payload(), QCryptographicHash::Sha256).toHex());
}

} // namespace tessera::protocol
