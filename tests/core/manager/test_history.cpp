// SPDX-License-Identifier: Apache-2.0
// History on real SQLite files and chosen clocks, in a fixed time zone with daylight saving
// (CET/CEST): credits land in the minute, local hour and local day they were granted, including
// across the 25-hour day in October; the ledger is read while a real LocalLedger holds it open and
// writes, and while another writer holds an uncommitted transaction; a missing ledger is an empty
// history and a damaged one a clear error; the activity log turns the node's counter (restarts
// included) into tasks per minute, averages the compute share, and forgets samples after 31 days.
#include "ReceiptChain.h"
#include "common/Identity.h"
#include "manager/CreditDays.h"
#include "manager/History.h"
#include "node/ledger/LocalLedger.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

#include <ctime>
#include <memory>

using namespace tessera;
using namespace tessera::manager;

namespace {

constexpr qint64 kMinute = 60'000;
constexpr qint64 kHour = 60 * kMinute;
constexpr qint64 kDay = 24 * kHour;

// QVERIFY2 builds its message even when the check passes: read it only from a failure.
template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

// Local wall-clock time in the test's zone, in ms since the epoch.
qint64 local(int year, int month, int day, int hour, int minute, int second = 0) {
    return QDateTime(QDate(year, month, day), QTime(hour, minute, second)).toMSecsSinceEpoch();
}

// The node's side: a real LocalLedger (WAL mode, open for as long as this lives) fed with receipts
// signed like the coordinator's, at the times a test picks.
class NodeLedger final {
public:
    static std::unique_ptr<NodeLedger> open(const QString& path) {
        Result<Identity> coordinator = Identity::generate();
        Result<Identity> node = Identity::generate();
        if (!coordinator || !node)
            return nullptr;
        auto ledger = node::LocalLedger::open(path, node->nodeId(), coordinator->publicKey());
        if (!ledger)
            return nullptr;
        return std::unique_ptr<NodeLedger>(new NodeLedger(*coordinator, node->nodeId(), std::move(*ledger)));
    }

    bool add(qint64 issuedAtMs, qint64 microCredits) {
        protocol::CreditReceipt r;
        r.nodeId = m_nodeId;
        r.seq = ++m_seq;
        r.issuedAtMs = issuedAtMs;
        r.microCredits = microCredits;
        r.flop = microCredits * protocol::kFlopPerMicroCredit;
        r.prevHash = m_lastHash;
        r = test::ReceiptChain::sign(std::move(r), m_key);
        m_lastHash = r.hash;
        Result<node::IngestResult> stored = m_ledger->ingest({r});
        return stored && stored->stored == 1;
    }

private:
    NodeLedger(Identity key, QString nodeId, std::unique_ptr<node::LocalLedger> ledger)
        : m_key(std::move(key))
        , m_nodeId(std::move(nodeId))
        , m_ledger(std::move(ledger)) {}

    Identity m_key;
    QString m_nodeId;
    std::unique_ptr<node::LocalLedger> m_ledger;
    qint64 m_seq = 0;
    QString m_lastHash = protocol::kGenesisHash;
};

double sum(const QList<double>& values) {
    double s = 0;
    for (double v : values)
        s += v;
    return s;
}

} // namespace

class TestHistory final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();

    void bucketsFollowTheLocalClock();
    void missingLedgerIsAnEmptyHistory();
    void creditsLandInTheirBuckets();
    void localDayOfTwentyFiveHours();
    void readsWhileTheNodeWrites();
    void damagedLedgerIsAClearError();
    void creditsDayByDayAndTheirCsv();
    void rateOfTheLastHourAndDay();

    void tasksPerMinuteAcrossANodeRestart();
    void computeShareIsAveragedPerBucket();
    void runningBucketAveragesOverItsElapsedPart();
    void historySurvivesReopenAndForgetsAfter31Days();
    void damagedActivityFileIsAClearError();

private:
    QString path(const QString& name) const { return m_dir->filePath(name); }

    std::unique_ptr<QTemporaryDir> m_dir;
    // Friday 2024-03-15 14:37:20 CET (UTC+1).
    qint64 m_now = 0;
};

void TestHistory::initTestCase() {
    // A POSIX rule, so that no zone database is needed: CET, CEST from March to October.
    qputenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3");
    tzset();
    m_now = local(2024, 3, 15, 14, 37, 20);
    QCOMPARE(m_now, qint64(1'710'509'840'000)); // 13:37:20 UTC
    QCOMPARE(QDateTime::fromMSecsSinceEpoch(local(2024, 7, 1, 12, 0)).offsetFromUtc(), 7200);
}

void TestHistory::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
}

void TestHistory::bucketsFollowTheLocalClock() {
    const HistorySeries hour = emptySeries(HistoryRange::Hour, m_now);
    QCOMPARE(hour.values.size(), 60);
    QCOMPARE(hour.bucketMs, kMinute);
    QCOMPARE(hour.startMs, local(2024, 3, 15, 13, 38)); // the last bucket is 14:37:00-14:38:00

    const HistorySeries day = emptySeries(HistoryRange::Day, m_now);
    QCOMPARE(day.values.size(), 24);
    QCOMPARE(day.bucketMs, kHour);
    QCOMPARE(day.startMs, local(2024, 3, 14, 15, 0)); // the last bucket is 14:00-15:00 today

    const HistorySeries month = emptySeries(HistoryRange::Month, m_now);
    QCOMPARE(month.values.size(), 30);
    QCOMPARE(month.bucketMs, kDay);
    QCOMPARE(month.startMs, local(2024, 2, 15, 0, 0)); // Feb 15 … Mar 15, today last

    for (double v : hour.values + day.values + month.values)
        QCOMPARE(v, 0.0);
}

// The dashboard's daily table: local days (23:59 and 00:01 on two rows), a day without credit as a
// zero row, newest first; the export oldest first, one line a day.
void TestHistory::creditsDayByDayAndTheirCsv() {
    const QString file = path(QStringLiteral("ledger.sqlite"));
    Result<QList<CreditDay>> none = CreditDays::days(file, m_now);
    QVERIFY2(none, failure(none));
    QCOMPARE(none->size(), 1); // today, with nothing yet
    QCOMPARE(none->first().credits, 0.0);

    std::unique_ptr<NodeLedger> node = NodeLedger::open(file);
    QVERIFY(node);
    QVERIFY(node->add(local(2024, 3, 12, 10, 0), 3'000'000));
    QVERIFY(node->add(local(2024, 3, 14, 23, 59), 2'000'000));
    QVERIFY(node->add(local(2024, 3, 15, 0, 1), 1'500'000));
    QVERIFY(node->add(local(2024, 3, 15, 14, 37, 5), 125'000));
    Result<QList<CreditDay>> days = CreditDays::days(file, m_now);
    QVERIFY2(days, failure(days));
    QCOMPARE(days->size(), 4); // 15, 14, 13 (nothing) and 12 March
    QCOMPARE(days->at(0).day, QDate(2024, 3, 15));
    QCOMPARE(days->at(0).credits, 1.625);
    QCOMPARE(days->at(0).receipts, 2);
    QCOMPARE(days->at(1).credits, 2.0);
    QCOMPARE(days->at(2).day, QDate(2024, 3, 13));
    QCOMPARE(days->at(2).receipts, 0);
    QCOMPARE(days->at(3).credits, 3.0);
    QCOMPARE(CreditDays::csv(*days), QByteArray("date,credits,receipts\r\n2024-03-12,3.000000,1\r\n"
                                                "2024-03-13,0.000000,0\r\n2024-03-14,2.000000,1\r\n"
                                                "2024-03-15,1.625000,2\r\n"));
}

void TestHistory::rateOfTheLastHourAndDay() {
    const QString file = path(QStringLiteral("ledger.sqlite"));
    std::unique_ptr<NodeLedger> node = NodeLedger::open(file);
    QVERIFY(node);
    QVERIFY(node->add(m_now - 25 * kHour, 8'000'000)); // too old for either
    QVERIFY(node->add(m_now - 3 * kHour, 2'000'000));  // the last day only
    QVERIFY(node->add(m_now - 30 * kMinute, 500'000));
    QVERIFY(node->add(m_now - 5'000, 250'000));
    Result<CreditRate> rate = CreditDays::rate(file, m_now);
    QVERIFY2(rate, failure(rate));
    QCOMPARE(rate->lastHour, 0.75);
    QCOMPARE(rate->lastDay, 2.75);
}

void TestHistory::missingLedgerIsAnEmptyHistory() {
    const QString ledger = path(QStringLiteral("node/ledger.sqlite"));
    Result<HistorySeries> s = CreditHistory::series(ledger, HistoryRange::Day, m_now);
    QVERIFY2(s, failure(s));
    QCOMPARE(s->values.size(), 24);
    QCOMPARE(sum(s->values), 0.0);
    Result<CreditTotals> t = CreditHistory::totals(ledger, m_now);
    QVERIFY2(t, failure(t));
    QCOMPARE(t->total, 0.0);
    QCOMPARE(t->receipts, 0);
    QVERIFY(!QFile::exists(ledger)); // only the node creates it
}

void TestHistory::creditsLandInTheirBuckets() {
    const QString file = path(QStringLiteral("ledger.sqlite"));
    std::unique_ptr<NodeLedger> node = NodeLedger::open(file);
    QVERIFY(node);
    QVERIFY(node->add(m_now - 40 * kDay, 9'000'000));           // older than a month
    QVERIFY(node->add(local(2024, 3, 12, 10, 0), 3'000'000));   // Tuesday
    QVERIFY(node->add(local(2024, 3, 14, 23, 59), 2'000'000));  // yesterday, one minute to midnight
    QVERIFY(node->add(local(2024, 3, 15, 0, 1), 1'500'000));    // today, a minute after
    QVERIFY(node->add(local(2024, 3, 15, 13, 40), 250'000));    // an hour ago
    QVERIFY(node->add(local(2024, 3, 15, 14, 37, 5), 125'000)); // this minute
    QVERIFY(node->add(local(2024, 3, 15, 14, 37, 10), 125'000));

    Result<HistorySeries> hour = CreditHistory::series(file, HistoryRange::Hour, m_now);
    QVERIFY2(hour, failure(hour));
    QCOMPARE(hour->values.last(), 0.25);
    QCOMPARE(hour->values.at(hour->values.size() - 58), 0.25); // 13:40 is 57 minutes before 14:37
    QCOMPARE(sum(hour->values), 0.5);

    Result<HistorySeries> day = CreditHistory::series(file, HistoryRange::Day, m_now);
    QVERIFY2(day, failure(day));
    QCOMPARE(day->values.at(23), 0.25); // 14:00-15:00
    QCOMPARE(day->values.at(22), 0.25); // 13:00-14:00
    QCOMPARE(day->values.at(9), 1.5);   // 00:00-01:00
    QCOMPARE(day->values.at(8), 2.0);   // 23:00-24:00 yesterday
    QCOMPARE(sum(day->values), 4.0);

    Result<HistorySeries> month = CreditHistory::series(file, HistoryRange::Month, m_now);
    QVERIFY2(month, failure(month));
    QCOMPARE(month->values.at(29), 2.0); // today
    QCOMPARE(month->values.at(28), 2.0); // yesterday
    QCOMPARE(month->values.at(26), 3.0); // Tuesday
    QCOMPARE(sum(month->values), 7.0);

    Result<CreditTotals> t = CreditHistory::totals(file, m_now);
    QVERIFY2(t, failure(t));
    QCOMPARE(t->today, 2.0); // since local midnight: not the 23:59 receipt
    QCOMPARE(t->total, 16.0);
    QCOMPARE(t->receipts, 7);
    QCOMPARE(t->flop, qint64(16) * 1'000'000'000'000'000);
}

void TestHistory::localDayOfTwentyFiveHours() {
    // Sunday 2024-10-27 has 25 hours: 02:00-03:00 happens twice. Its last half hour is still
    // that Sunday; counted in 24-hour steps from the first day it would slip into Monday.
    const QString file = path(QStringLiteral("ledger.sqlite"));
    std::unique_ptr<NodeLedger> node = NodeLedger::open(file);
    QVERIFY(node);
    QVERIFY(node->add(local(2024, 10, 27, 23, 30), 1'000'000));
    QVERIFY(node->add(local(2024, 10, 28, 0, 30), 2'000'000));
    const qint64 now = local(2024, 11, 5, 12, 0);
    Result<HistorySeries> month = CreditHistory::series(file, HistoryRange::Month, now);
    QVERIFY2(month, failure(month));
    QCOMPARE(month->startMs, local(2024, 10, 7, 0, 0));
    QCOMPARE(month->values.at(20), 1.0); // Oct 27
    QCOMPARE(month->values.at(21), 2.0); // Oct 28
}

void TestHistory::readsWhileTheNodeWrites() {
    const QString file = path(QStringLiteral("ledger.sqlite"));
    std::unique_ptr<NodeLedger> node = NodeLedger::open(file);
    QVERIFY(node);
    for (int i = 0; i < 3; ++i)
        QVERIFY(node->add(m_now - i * kMinute, 1'000'000));
    QVERIFY(QFile::exists(file + QStringLiteral("-wal"))); // the node holds it open in WAL mode
    Result<CreditTotals> t = CreditHistory::totals(file, m_now);
    QVERIFY2(t, failure(t));
    QCOMPARE(t->receipts, 3);

    // Committed while the node keeps the file open: seen by the next read.
    QVERIFY(node->add(m_now, 1'000'000));
    t = CreditHistory::totals(file, m_now);
    QVERIFY2(t, failure(t));
    QCOMPARE(t->receipts, 4);
    QCOMPARE(t->today, 4.0);

    // A writer in the middle of a transaction neither blocks the reader nor shows it half a write.
    const QString writer = QStringLiteral("uncommitted-writer");
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), writer);
        db.setDatabaseName(file);
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY(q.exec(QStringLiteral("BEGIN IMMEDIATE")));
        QVERIFY(q.exec(
            QStringLiteral("INSERT INTO receipts VALUES (99, %1, 1, 5000000, '', '', x'00')").arg(m_now)));
        QElapsedTimer timer;
        timer.start();
        t = CreditHistory::totals(file, m_now);
        QVERIFY2(t, failure(t));
        QCOMPARE(t->receipts, 4);
        QVERIFY2(timer.elapsed() < 1000, "the reader waited for the writer");
        QVERIFY(q.exec(QStringLiteral("ROLLBACK")));
        db.close();
    }
    QSqlDatabase::removeDatabase(writer);

    // After the node closes the ledger (its WAL folded back in and removed) it reads the same.
    node.reset();
    QVERIFY(!QFile::exists(file + QStringLiteral("-wal")));
    Result<HistorySeries> hour = CreditHistory::series(file, HistoryRange::Hour, m_now);
    QVERIFY2(hour, failure(hour));
    QCOMPARE(sum(hour->values), 4.0);
    QCOMPARE(QSqlDatabase::connectionNames(), QStringList()); // each call removed its connection
}

void TestHistory::damagedLedgerIsAClearError() {
    const QString file = path(QStringLiteral("ledger.sqlite"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(8192, 'x'));
    f.close();
    Result<CreditTotals> t = CreditHistory::totals(file, m_now);
    QVERIFY(!t);
    QVERIFY2(QString::fromStdString(t.message()).contains(file), t.message().c_str());
    QVERIFY2(t.message().find("not a database") != std::string::npos, t.message().c_str());
    QVERIFY2(t.message().find("ledger verify") != std::string::npos, t.message().c_str());
    Result<HistorySeries> s = CreditHistory::series(file, HistoryRange::Day, m_now);
    QVERIFY(!s);

    // An SQLite file of something else entirely.
    const QString other = path(QStringLiteral("other.sqlite"));
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("other"));
        db.setDatabaseName(other);
        QVERIFY(db.open());
        QVERIFY(QSqlQuery(db).exec(QStringLiteral("CREATE TABLE photos (id INTEGER)")));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("other"));
    s = CreditHistory::series(other, HistoryRange::Day, m_now);
    QVERIFY(!s);
    QVERIFY2(s.message().find("not a tessera-node ledger") != std::string::npos, s.message().c_str());
}

void TestHistory::tasksPerMinuteAcrossANodeRestart() {
    ActivityLog log;
    QVERIFY(log.open(path(QStringLiteral("activity.sqlite"))));
    // Two whole minutes of samples every 10 s, 5 tasks between samples; then the node restarts
    // (its counter starts again from 0) and has done 7 tasks by the next sample.
    const qint64 start = local(2024, 3, 15, 14, 34);
    qint64 counter = 0;
    for (int i = 0; i < 12; ++i) {
        counter += 5;
        QVERIFY(log.record(start + i * 10'000, counter, 1.0));
    }
    QVERIFY(log.record(start + 2 * kMinute, 7, 1.0));
    QVERIFY(log.record(start + 2 * kMinute + 10'000, 9, 1.0));

    Result<HistorySeries> s = log.tasksPerMinute(HistoryRange::Hour, m_now);
    QVERIFY2(s, failure(s));
    QCOMPARE(s->values.at(56), 30.0); // 14:34: the first sample counts all it has done
    QCOMPARE(s->values.at(57), 30.0); // 14:35
    QCOMPARE(s->values.at(58), 9.0);  // 14:36: 7 after the restart, then 2 more
    QCOMPARE(s->values.at(59), 0.0);
    QCOMPARE(sum(s->values), 69.0);
}

void TestHistory::computeShareIsAveragedPerBucket() {
    ActivityLog log;
    QVERIFY(log.open(path(QStringLiteral("activity.sqlite"))));
    const qint64 hour = local(2024, 3, 15, 12, 0);
    QVERIFY(log.record(hour + 1 * kMinute, 0, 0.5));
    QVERIFY(log.record(hour + 2 * kMinute, 0, 1.0));
    QVERIFY(log.record(hour + 3 * kMinute, 0, 2.0)); // a bad reading counts as fully busy
    QVERIFY(log.record(hour + 4 * kMinute, 0, 0.0));
    Result<HistorySeries> s = log.computeShare(HistoryRange::Day, m_now);
    QVERIFY2(s, failure(s));
    QCOMPARE(s->values.at(21), 0.625); // 12:00-13:00
    QCOMPARE(s->values.at(22), 0.0);   // the node did not run
    QCOMPARE(sum(s->values), 0.625);
}

void TestHistory::runningBucketAveragesOverItsElapsedPart() {
    // At 14:37:20 this hour has lasted 37 min 20 s: 112 tasks in it are 3 a minute, not 1.87.
    ActivityLog log;
    QVERIFY(log.open(path(QStringLiteral("activity.sqlite"))));
    QVERIFY(log.record(local(2024, 3, 15, 13, 30), 120, 1.0));
    QVERIFY(log.record(local(2024, 3, 15, 14, 30), 232, 1.0));
    Result<HistorySeries> s = log.tasksPerMinute(HistoryRange::Day, m_now);
    QVERIFY2(s, failure(s));
    QCOMPARE(s->values.at(22), 2.0); // 120 tasks in a whole hour
    QCOMPARE(s->values.at(23), 3.0);
}

void TestHistory::historySurvivesReopenAndForgetsAfter31Days() {
    const QString file = path(QStringLiteral("app/activity.sqlite"));
    const qint64 now = QDateTime::currentMSecsSinceEpoch(); // open() forgets by the real clock
    {
        ActivityLog log;
        QVERIFY(log.open(file));
        QVERIFY(log.record(now - 40 * kDay, 100, 1.0));
        QVERIFY(log.record(now - kDay, 50, 1.0)); // a restarted node: 50 new tasks
        Result<HistorySeries> then = log.tasksPerMinute(HistoryRange::Month, now - 35 * kDay);
        QVERIFY2(then, failure(then));
        QVERIFY(sum(then->values) > 0); // 100 tasks in a day's bucket
    }
    ActivityLog log;
    QVERIFY(log.open(file));
    Result<HistorySeries> then = log.tasksPerMinute(HistoryRange::Month, now - 35 * kDay);
    QVERIFY2(then, failure(then));
    QCOMPARE(sum(then->values), 0.0);
    Result<HistorySeries> month = log.tasksPerMinute(HistoryRange::Month, now);
    QVERIFY2(month, failure(month));
    QVERIFY(month->values.at(28) > 0 || month->values.at(27) > 0); // yesterday's 50 are kept
}

void TestHistory::damagedActivityFileIsAClearError() {
    const QString file = path(QStringLiteral("activity.sqlite"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(8192, 'x'));
    f.close();
    ActivityLog log;
    const Status opened = log.open(file);
    QVERIFY(!opened);
    QVERIFY2(opened.message().find(file.toStdString()) != std::string::npos, opened.message().c_str());
    QVERIFY2(opened.message().find("delete the file") != std::string::npos, opened.message().c_str());
    Status recorded = log.record(m_now, 1, 1.0);
    QVERIFY(!recorded);
    QCOMPARE(recorded.message(), std::string("the activity history is not open"));
}

QTEST_GUILESS_MAIN(TestHistory)
#include "test_history.moc"
