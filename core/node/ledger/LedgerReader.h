// SPDX-License-Identifier: Apache-2.0
#pragma once
// LedgerReader: what other programs may read of a node's credit ledger (ledger.sqlite) while the
// node writes it — credits per minute and the totals. Read-only, never blocking the node (WAL), and
// the only code outside LocalLedger that knows the ledger's tables. A missing file, or one the node
// has only just created, reads as an empty ledger.

#include "base/Result.h"

#include <QString>
#include <QtGlobal>

#include <vector>

namespace tessera::node {

struct MinuteCredits {
    qint64 minute = 0; // minutes since the epoch (UTC)
    qint64 microCredits = 0;
    qint64 receipts = 0;
};

struct LedgerSummary {
    qint64 receipts = 0;
    qint64 microCredits = 0;
    double flop = 0;              // approximate: the sum passes 2^63 after long enough
    qint64 microCreditsSince = 0; // in receipts issued at or after the `sinceMs` asked for
};

class LedgerReader final {
public:
    // Micro-credits (and receipts) issued in [fromMs, toMs), summed per minute, oldest first.
    static Result<std::vector<MinuteCredits>> creditsPerMinute(const QString& ledgerPath, qint64 fromMs,
                                                               qint64 toMs);
    static Result<LedgerSummary> summary(const QString& ledgerPath, qint64 sinceMs);
};

} // namespace tessera::node
