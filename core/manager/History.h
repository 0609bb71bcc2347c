// SPDX-License-Identifier: Apache-2.0
#pragma once
// History: what the dashboard charts — credits from the node's ledger (read-only; the node owns
// it) and the node's throughput, sampled by the app into its own small SQLite file — bucketed
// over the last hour (60 × 1 min), day (24 × 1 h) or month (30 × 1 day).

#include "base/Result.h"

#include <QList>
#include <QSqlDatabase>
#include <QString>

namespace tessera::manager {

enum class HistoryRange { Hour, Day, Month };

// Buckets are aligned to whole minutes, local hours and local days (from local midnight), so
// that the bars line up with the clock the user reads.
struct HistorySeries {
    qint64 startMs = 0;   // the first bucket's start
    qint64 bucketMs = 0;  // nominal for Month: a local day lasts 23 or 25 h across a DST change
    QList<double> values; // oldest first; the last bucket holds now
};

struct CreditTotals {
    double today = 0; // credits granted since local midnight
    double total = 0;
    qint64 receipts = 0;
    qint64 flop = 0; // all accepted work, in FLOP
};

// The buckets for `range` ending at nowMs (the last one holds nowMs).
HistorySeries emptySeries(HistoryRange range, qint64 nowMs);

class CreditHistory final {
public:
    // Credits per bucket from the node's ledger.sqlite (opened read-only for the query; a missing
    // file is an empty history, not an error: the node has not joined yet).
    static Result<HistorySeries> series(const QString& ledgerPath, HistoryRange range, qint64 nowMs);
    static Result<CreditTotals> totals(const QString& ledgerPath, qint64 nowMs);
};

// The app's own record of the node's work: one sample every ~10 s while it runs. It belongs to the
// thread that opened it (Qt SQL connections must not cross threads).
class ActivityLog final {
public:
    ActivityLog() = default;
    ~ActivityLog();
    ActivityLog(const ActivityLog&) = delete;
    ActivityLog& operator=(const ActivityLog&) = delete;

    // Opens (creating) the file; samples older than 31 days are dropped.
    Status open(const QString& path);
    // tasksDone: the node's counter since it started (a restart resets it; the log handles that).
    // The first sample after open() counts all of it: the node starts with the app. computeShare
    // is clamped to 0…1.
    Status record(qint64 nowMs, qint64 tasksDone, double computeShare);
    // Tasks per minute in each bucket; the running bucket over the part of it that has passed.
    Result<HistorySeries> tasksPerMinute(HistoryRange range, qint64 nowMs) const;
    // The share of time computing, the mean of each bucket's samples (0 where the node did not run).
    Result<HistorySeries> computeShare(HistoryRange range, qint64 nowMs) const;

private:
    void close();

    QString m_connection; // empty while closed
    qint64 m_lastTasks = -1;
};

} // namespace tessera::manager
