// SPDX-License-Identifier: Apache-2.0
#include "manager/History.h"

#include "common/Sql.h"
#include "node/ledger/LedgerReader.h"
#include "protocol/CreditReceipt.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>

namespace tessera::manager {

namespace sql = tessera::sql;

namespace {

constexpr qint64 kMinuteMs = 60'000;
constexpr qint64 kHourMs = 60 * kMinuteMs;
constexpr qint64 kDayMs = 24 * kHourMs;
constexpr qint64 kKeepMs = 31 * kDayMs;

std::string text(const QString& s) {
    return s.toStdString();
}

QString nextConnectionName(const char* prefix) {
    static std::atomic<quint64> counter{0};
    return QStringLiteral("%1-%2").arg(QLatin1String(prefix)).arg(counter.fetch_add(1) + 1);
}

qint64 floorTo(qint64 ms, qint64 step) {
    const qint64 q = ms / step;
    return (q - (ms % step < 0 ? 1 : 0)) * step;
}

qint64 nominalBucketMs(HistoryRange range) {
    switch (range) {
    case HistoryRange::Hour:
        return kMinuteMs;
    case HistoryRange::Day:
        return kHourMs;
    case HistoryRange::Month:
        break;
    }
    return kDayMs;
}

// The n + 1 edges of range's n buckets; the last bucket [edges[n-1], edges[n]) holds nowMs.
QList<qint64> bucketEdges(HistoryRange range, qint64 nowMs) {
    QList<qint64> edges;
    const QDateTime now = QDateTime::fromMSecsSinceEpoch(nowMs); // local time
    if (range == HistoryRange::Month) {
        // Local days, not 24 h steps: a day across a DST change is 23 or 25 h long.
        const QDate today = now.date();
        for (int day = -29; day <= 1; ++day)
            edges.append(today.addDays(day).startOfDay().toMSecsSinceEpoch());
        return edges;
    }
    const int count = range == HistoryRange::Hour ? 60 : 24;
    const qint64 step = nominalBucketMs(range);
    // Local hours: in a zone offset by a half hour from UTC they start at :30 UTC.
    const qint64 offsetMs = qint64(now.offsetFromUtc()) * 1000;
    const qint64 end = floorTo(nowMs + offsetMs, step) - offsetMs + step;
    for (int i = count; i >= 0; --i)
        edges.append(end - i * step);
    return edges;
}

HistorySeries seriesFor(HistoryRange range, const QList<qint64>& edges) {
    HistorySeries s;
    s.startMs = edges.front();
    s.bucketMs = nominalBucketMs(range);
    s.values = QList<double>(edges.size() - 1, 0.0);
    return s;
}

// The bucket holding t, or -1 when it is outside them all.
qsizetype bucketOf(const QList<qint64>& edges, qint64 t) {
    if (t < edges.front() || t >= edges.back())
        return -1;
    return std::upper_bound(edges.begin(), edges.end(), t) - edges.begin() - 1;
}

struct SampleSums {
    QList<double> tasks;
    QList<double> share;
    QList<qint64> count;
};

// The activity samples summed per bucket; SQL adds them up per minute first (every edge is a
// whole minute), so that a month is at most 43,200 rows rather than a row per sample.
Result<SampleSums> sampleSums(const QSqlDatabase& db, const QList<qint64>& edges) {
    Result<QSqlQuery> q = sql::exec(
        db,
        QStringLiteral("SELECT t_ms / 60000, SUM(tasks_delta), SUM(compute_share), COUNT(*) FROM samples "
                       "WHERE t_ms >= ? AND t_ms < ? GROUP BY 1"),
        {edges.front(), edges.back()});
    if (!q)
        return makeError("cannot read the activity history: " + q.message());
    const qsizetype n = edges.size() - 1;
    SampleSums sums{QList<double>(n, 0.0), QList<double>(n, 0.0), QList<qint64>(n, 0)};
    while (q->next()) {
        const qsizetype i = bucketOf(edges, q->value(0).toLongLong() * kMinuteMs);
        if (i < 0)
            continue;
        sums.tasks[i] += q->value(1).toDouble();
        sums.share[i] += q->value(2).toDouble();
        sums.count[i] += q->value(3).toLongLong();
    }
    return sums;
}

} // namespace

HistorySeries emptySeries(HistoryRange range, qint64 nowMs) {
    return seriesFor(range, bucketEdges(range, nowMs));
}

Result<HistorySeries> CreditHistory::series(const QString& ledgerPath, HistoryRange range, qint64 nowMs) {
    const QList<qint64> edges = bucketEdges(range, nowMs);
    HistorySeries s = seriesFor(range, edges);
    Result<std::vector<node::MinuteCredits>> minutes =
        node::LedgerReader::creditsPerMinute(ledgerPath, edges.front(), edges.back());
    if (!minutes)
        return minutes.error();
    for (const node::MinuteCredits& m : *minutes)
        if (const qsizetype i = bucketOf(edges, m.minute * kMinuteMs); i >= 0)
            s.values[i] += double(m.microCredits) / protocol::kMicroCreditsPerCredit;
    return s;
}

Result<CreditTotals> CreditHistory::totals(const QString& ledgerPath, qint64 nowMs) {
    const qint64 midnight = QDateTime::fromMSecsSinceEpoch(nowMs).date().startOfDay().toMSecsSinceEpoch();
    Result<node::LedgerSummary> summary = node::LedgerReader::summary(ledgerPath, midnight);
    if (!summary)
        return summary.error();
    CreditTotals t;
    t.receipts = summary->receipts;
    t.total = double(summary->microCredits) / protocol::kMicroCreditsPerCredit;
    t.flop = summary->flop >= double(std::numeric_limits<qint64>::max()) ? std::numeric_limits<qint64>::max()
                                                                         : qint64(summary->flop);
    t.today = double(summary->microCreditsSince) / protocol::kMicroCreditsPerCredit;
    return t;
}

ActivityLog::~ActivityLog() {
    close();
}

void ActivityLog::close() {
    if (m_connection.isEmpty())
        return;
    {
        QSqlDatabase db = QSqlDatabase::database(m_connection, false);
        db.close();
    }
    QSqlDatabase::removeDatabase(m_connection);
    m_connection.clear();
    m_lastTasks = -1;
}

Status ActivityLog::open(const QString& path) {
    close();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    if (!QDir().mkpath(QFileInfo(absolute).absolutePath()))
        return makeError("cannot create the folder for the activity history " + text(absolute));
    const QString name = nextConnectionName("tessera-activity");
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(absolute);
        const auto fail = [&](const std::string& why) {
            return makeError("cannot open the activity history " + text(absolute) + ": " + why +
                             " (delete the file to start a new history)");
        };
        Status s;
        if (!db.open()) {
            s = fail(text(db.lastError().text()));
        } else {
            const qint64 oldest = QDateTime::currentMSecsSinceEpoch() - kKeepMs;
            // A lost last sample is harmless here, so WAL without a sync per commit: it
            // spares the disk a flush every ten seconds.
            for (const auto& [statement, values] : QList<std::pair<QString, QVariantList>>{
                     {QStringLiteral("PRAGMA journal_mode = WAL"), {}},
                     {QStringLiteral("PRAGMA synchronous = NORMAL"), {}},
                     {QStringLiteral("CREATE TABLE IF NOT EXISTS samples (t_ms INTEGER NOT NULL, "
                                     "tasks_delta INTEGER NOT NULL, compute_share REAL NOT NULL)"),
                      {}},
                     {QStringLiteral("CREATE INDEX IF NOT EXISTS samples_t ON samples (t_ms)"), {}},
                     {QStringLiteral("DELETE FROM samples WHERE t_ms < ?"), {oldest}}}) {
                if (Result<QSqlQuery> q = sql::exec(db, statement, values); !q) {
                    s = fail(q.message());
                    break;
                }
            }
        }
        if (!s) {
            db.close();
            db = QSqlDatabase();
            QSqlDatabase::removeDatabase(name);
            return s;
        }
    }
    m_connection = name;
    return {};
}

Status ActivityLog::record(qint64 nowMs, qint64 tasksDone, double computeShare) {
    if (m_connection.isEmpty())
        return makeError("the activity history is not open");
    tasksDone = std::max<qint64>(tasksDone, 0);
    // A counter lower than the last one belongs to a restarted node: all of it is new work.
    const qint64 delta = m_lastTasks < 0 || tasksDone < m_lastTasks ? tasksDone : tasksDone - m_lastTasks;
    const double share = std::isfinite(computeShare) ? std::clamp(computeShare, 0.0, 1.0) : 0.0;
    Result<QSqlQuery> q =
        sql::exec(QSqlDatabase::database(m_connection, false),
                  QStringLiteral("INSERT INTO samples (t_ms, tasks_delta, compute_share) VALUES (?, ?, ?)"),
                  {nowMs, delta, share});
    if (!q)
        return makeError("cannot record the node's activity: " + q.message());
    m_lastTasks = tasksDone; // only now: a failed insert leaves its tasks to the next sample
    return {};
}

Result<HistorySeries> ActivityLog::tasksPerMinute(HistoryRange range, qint64 nowMs) const {
    if (m_connection.isEmpty())
        return makeError("the activity history is not open");
    const QList<qint64> edges = bucketEdges(range, nowMs);
    Result<SampleSums> sums = sampleSums(QSqlDatabase::database(m_connection, false), edges);
    if (!sums)
        return sums.error();
    HistorySeries s = seriesFor(range, edges);
    const qsizetype last = s.values.size() - 1;
    for (qsizetype i = 0; i <= last; ++i) {
        qint64 spanMs = edges[i + 1] - edges[i];
        // The running bucket is averaged over the part that has passed (at least a minute), so
        // that today's bar is not low only because the day is young.
        if (i == last)
            spanMs = std::clamp(nowMs - edges[i], std::min(kMinuteMs, spanMs), spanMs);
        s.values[i] = sums->tasks[i] / (double(spanMs) / double(kMinuteMs));
    }
    return s;
}

Result<HistorySeries> ActivityLog::computeShare(HistoryRange range, qint64 nowMs) const {
    if (m_connection.isEmpty())
        return makeError("the activity history is not open");
    const QList<qint64> edges = bucketEdges(range, nowMs);
    Result<SampleSums> sums = sampleSums(QSqlDatabase::database(m_connection, false), edges);
    if (!sums)
        return sums.error();
    HistorySeries s = seriesFor(range, edges);
    for (qsizetype i = 0; i < s.values.size(); ++i)
        s.values[i] = sums->count[i] > 0 ? sums->share[i] / double(sums->count[i]) : 0.0;
    return s;
}

} // namespace tessera::manager
