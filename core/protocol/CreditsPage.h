// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditsPage: the strict reading of one page of GET /v1/nodes/{id}/credits into credit receipts.

#include "base/Result.h"
#include "protocol/CreditReceipt.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include <vector>

namespace tessera::protocol {

using protocol::CreditReceipt;

// The page's fields beside its receipts, checked but not needed to store them.
struct CreditsPageInfo {
    qint64 lastSeq = 0;
    qint64 totalMicroCredits = 0;
    QByteArray coordinatorKey; // raw Ed25519 public key, 32 bytes
    // "escrow" (optional: coordinators before 0.3 have none): work accepted but not yet in a
    // receipt (pending until an audit covers it), and what failed checks forfeited, with the last reason.
    qint64 pendingFlop = 0;
    qint64 forfeitedFlop = 0;
    QString lastForfeitReason;
};

// Every field's type and range is checked, and an error names the bad field
// ("receipts[3].prev_hash: must be 64 lowercase hex digits"). The receipts are not yet
// trusted: signatures, hashes and chaining are LocalLedger::ingest's to check.
Result<std::vector<CreditReceipt>> parseCreditsPage(const QJsonObject& page, const QString& expectedNodeId,
                                                    CreditsPageInfo* info = nullptr);

} // namespace tessera::protocol
