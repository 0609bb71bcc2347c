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
};

// Every field's type and range is checked, and an error names the bad field
// ("receipts[3].prev_hash: must be 64 lowercase hex digits"). The receipts are not yet
// trusted: signatures, hashes and chaining are LocalLedger::ingest's to check.
Result<std::vector<CreditReceipt>> parseCreditsPage(const QJsonObject& page, const QString& expectedNodeId,
                                                    CreditsPageInfo* info = nullptr);

} // namespace tessera::protocol
