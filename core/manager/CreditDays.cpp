// SPDX-License-Identifier: Apache-2.0
#include "manager/CreditDays.h"

#include "node/ledger/LedgerReader.h"
#include "protocol/CreditReceipt.h"

#include <QDateTime>
#include <QMap>

#include <algorithm>

namespace tessera::manager {

namespace {

constexpr qint64 kMinuteMs = 60'000;
constexpr qint64 kHourMs = 60 * kMinuteMs;

double credits(qint64 microCredits) {
    return double(microCredits) / protocol::kMicroCreditsPerCredit;
}

} // namespace

Result<QList<CreditDay>> CreditDays::days(const QString& ledgerPath, qint64 nowMs) {
    const QDate today = QDateTime::fromMSecsSinceEpoch(nowMs).date();
    const qint64 from = today.addDays(-(kMaxDays - 1)).startOfDay().toMSecsSinceEpoch();
    const qint64 to = today.addDays(1).startOfDay().toMSecsSinceEpoch();
    Result<std::vector<node::MinuteCredits>> minutes =
        node::LedgerReader::creditsPerMinute(ledgerPath, from, to);
    if (!minutes)
        return minutes.error();
    QMap<QDate, CreditDay> byDay;
    for (const node::MinuteCredits& m : *minutes) {
        const QDate day = QDateTime::fromMSecsSinceEpoch(m.minute * kMinuteMs).date();
        CreditDay& d = byDay[day];
        d.day = day;
        d.credits += credits(m.microCredits);
        d.receipts += m.receipts;
    }
    const QDate first = byDay.isEmpty() ? today : std::min(byDay.firstKey(), today);
    QList<CreditDay> out;
    for (QDate day = today; day >= first; day = day.addDays(-1))
        out.append(byDay.value(day, CreditDay{day, 0, 0}));
    return out;
}

Result<CreditRate> CreditDays::rate(const QString& ledgerPath, qint64 nowMs) {
    Result<std::vector<node::MinuteCredits>> minutes =
        node::LedgerReader::creditsPerMinute(ledgerPath, nowMs - 24 * kHourMs, nowMs + 1);
    if (!minutes)
        return minutes.error();
    CreditRate r;
    for (const node::MinuteCredits& m : *minutes) {
        r.lastDay += credits(m.microCredits);
        if ((m.minute + 1) * kMinuteMs > nowMs - kHourMs)
            r.lastHour += credits(m.microCredits);
    }
    return r;
}

QByteArray CreditDays::csv(const QList<CreditDay>& days) {
    QByteArray out = "date,credits,receipts\r\n";
    for (auto it = days.crbegin(); it != days.crend(); ++it)
        out += it->day.toString(Qt::ISODate).toUtf8() + ',' + QByteArray::number(it->credits, 'f', 6) + ',' +
               QByteArray::number(it->receipts) + "\r\n";
    return out;
}

} // namespace tessera::manager
