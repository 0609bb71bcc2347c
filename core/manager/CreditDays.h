// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditDays: the node's credits day by day (local days) for the dashboard's table and its CSV
// export, and the rate it earns at (the last hour, the last 24 hours) — read from the node's
// ledger, which only the node writes.

#include "base/Result.h"

#include <QByteArray>
#include <QDate>
#include <QList>
#include <QString>

namespace tessera::manager {

struct CreditDay {
    QDate day; // local
    double credits = 0;
    qint64 receipts = 0;
};

struct CreditRate {
    double lastHour = 0; // credits granted in the 60 minutes before now
    double lastDay = 0;  // in the 24 hours before now
};

class CreditDays final {
public:
    static constexpr int kMaxDays = 366;

    // Every local day from the first with credit (at most kMaxDays ago) to today, days without
    // credit included so that a gap reads as a gap; newest first. Today alone when nothing was
    // granted yet.
    static Result<QList<CreditDay>> days(const QString& ledgerPath, qint64 nowMs);
    static Result<CreditRate> rate(const QString& ledgerPath, qint64 nowMs);
    // RFC 4180 with CRLF line ends, oldest first: date (ISO 8601), credits, receipts.
    static QByteArray csv(const QList<CreditDay>& days);
};

} // namespace tessera::manager
