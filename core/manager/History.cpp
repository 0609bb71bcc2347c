#include "manager/History.h"

#include "coordinator/Sql.h"

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

namespace sql = coordinator::sql;

namespace {

constexpr qint64 kMinuteMs = 60'000;
constexpr qint64 kHourMs = 60 * kMinuteMs;
constexpr qint64 kDayMs = 24 * kHourMs;
constexpr qint64 kKeepMs = 31 * kDayMs;
constexpr double kMicroCreditsPerCredit = 1e6;
// A reader waits this long when SQLite is busy (recovering the WAL after a crash of the node).
constexpr int kBusyTimeoutMs = 2000;

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

// The node's ledger, opened read-only for one call under a connection name of its own (so that
// calls from several threads never share one), which is removed again afterwards.
class LedgerReader final {
public:
    explicit LedgerReader(const QString& path)
        : m_path(path)
        , m_name(nextConnectionName("tessera-history-ledger")) {
        m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_name);
        m_db.setDatabaseName(path);
        // Read-only: the node owns the file. WAL mode lets this reader see every committed
        // receipt while the node writes, without ever blocking it.
        m_db.setConnectOptions(
            QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=%1").arg(kBusyTimeoutMs));
    }
    ~LedgerReader() {
        m_db.close();
        m_db = QSqlDatabase(); // every handle must be gone before Qt forgets the name
        QSqlDatabase::removeDatabase(m_name);
    }
    LedgerReader(const LedgerReader&) = delete;
    LedgerReader& operator=(const LedgerReader&) = delete;

    // True when the receipts table is there; false for a database the node has only just
    // created (no tables yet): an empty history.
    Result<bool> open() {
        if (!m_db.open())
            return fail(m_db.lastError());
        QSqlQuery q(m_db);
        if (!q.exec(QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table'")))
            return fail(q.lastError());
        QStringList tables;
        while (q.next())
            tables.append(q.value(0).toString());
        if (tables.contains(u"receipts"))
            return true;
        if (tables.isEmpty())
            return false;
        return makeError(text(m_path) + " is not a tessera-node ledger (it has no receipts table)");
    }

    Result<QSqlQuery> query(const QString& statement, const QVariantList& values) {
        QSqlQuery q(m_db);
        q.setForwardOnly(true);
        if (!q.prepare(statement))
            return fail(q.lastError());
        for (const QVariant& v : values)
            q.addBindValue(v);
        if (!q.exec())
            return fail(q.lastError());
        return q;
    }

private:
    Error fail(const QSqlError& e) const {
        QString why = e.databaseText().trimmed();
        if (why.isEmpty())
            why = e.text().trimmed();
        return makeError("cannot read the credit history from " + text(m_path) + ": " + text(why) +
                         " (the ledger may be damaged; check it with `tessera-node ledger verify`)");
    }

    QString m_path;
    QString m_name;
    QSqlDatabase m_db;
};

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

// The node's ledger, open for reading; null when there is none yet or it holds no receipts table
// (the node has not joined): an empty history, not an error.
static Result<std::unique_ptr<LedgerReader>> openLedger(const QString& path) {
    if (!QFileInfo::exists(path))
        return std::unique_ptr<LedgerReader>();
    auto ledger = std::make_unique<LedgerReader>(path);
    Result<bool> hasReceipts = ledger->open();
    if (!hasReceipts)
        return hasReceipts.error();
    if (!*hasReceipts)
        return std::unique_ptr<LedgerReader>();
    return ledger;
}

HistorySeries emptySeries(HistoryRange range, qint64 nowMs) {
    return seriesFor(range, bucketEdges(range, nowMs));
}

Result<HistorySeries> CreditHistory::series(const QString& ledgerPath, HistoryRange range, qint64 nowMs) {
    const QList<qint64> edges = bucketEdges(range, nowMs);
    HistorySeries s = seriesFor(range, edges);
    Result<std::unique_ptr<LedgerReader>> ledger = openLedger(ledgerPath);
    if (!ledger)
        return ledger.error();
    if (!*ledger)
        return s;
    Result<QSqlQuery> q =
        (*ledger)->query(QStringLiteral("SELECT issued_at / 60000, SUM(micro_credits) FROM receipts "
                                        "WHERE issued_at >= ? AND issued_at < ? GROUP BY 1"),
                         {edges.front(), edges.back()});
    if (!q)
        return q.error();
    while (q->next()) {
        const qsizetype i = bucketOf(edges, q->value(0).toLongLong() * kMinuteMs);
        if (i >= 0)
            s.values[i] += double(q->value(1).toLongLong()) / kMicroCreditsPerCredit;
    }
    return s;
}

Result<CreditTotals> CreditHistory::totals(const QString& ledgerPath, qint64 nowMs) {
    CreditTotals t;
    Result<std::unique_ptr<LedgerReader>> ledger = openLedger(ledgerPath);
    if (!ledger)
        return ledger.error();
    if (!*ledger)
        return t;
    const qint64 midnight = QDateTime::fromMSecsSinceEpoch(nowMs).date().startOfDay().toMSecsSinceEpoch();
    // TOTAL(flop) is a double: an integer SUM would fail once the FLOP pass 2^63.
    Result<QSqlQuery> q = (*ledger)->query(
        QStringLiteral(
            "SELECT COUNT(*), COALESCE(SUM(micro_credits), 0), TOTAL(flop), "
            "COALESCE(SUM(CASE WHEN issued_at >= ? THEN micro_credits ELSE 0 END), 0) FROM receipts"),
        {midnight});
    if (!q)
        return q.error();
    if (!q->next())
        return t;
    t.receipts = q->value(0).toLongLong();
    t.total = double(q->value(1).toLongLong()) / kMicroCreditsPerCredit;
    const double flop = q->value(2).toDouble();
    t.flop = flop >= double(std::numeric_limits<qint64>::max()) ? std::numeric_limits<qint64>::max()
                                                                : qint64(flop);
    t.today = double(q->value(3).toLongLong()) / kMicroCreditsPerCredit;
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
