// SPDX-License-Identifier: Apache-2.0
// The wall clock stepping back an hour on the coordinator and on the nodes (issue 17), with the real
// clock untouched: a real tessera-coordinator and two real nodes (two stages) train the tiny model
// under libfaketime (LD_PRELOAD; FAKETIME_TIMESTAMP_FILE is read again every second, so the test
// steps their clock while they run; the steady clock is left alone, as a real step leaves it).
// After the step:
//   - training goes on, and no session is dropped for it (rate limits measured on a clock an hour
//     in debt would refuse every message);
//   - a node that falls silent is still noticed (its last heartbeat must not sit an hour in the future);
//   - every time the coordinator stores keeps moving forward: steps' losses, receipts, accepted work
//     (work stamped an hour back would look older than the audits that passed before it, and leave
//     escrow unjudged);
//   - a restart with the clock still an hour back says so, and goes on from the stored times;
//   - the nodes' ledgers verify, receipts issued after the step included.
#include "CoordinatorProcess.h"
#include "SwarmNode.h"
#include "SwarmStatus.h"
#include "TestSupport.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <algorithm>
#include <memory>

using namespace tessera::test;

namespace {

// A failing run's log, kept in the system's temporary folder.
void keepLog(const QString& name, const QByteArray& log) {
    QFile kept(QDir::temp().filePath(u"tessera-clock-step-%1.log"_qs.arg(name)));
    if (kept.open(QIODevice::WriteOnly | QIODevice::Truncate) && kept.write(log) >= 0)
        qWarning("kept: %s", qPrintable(kept.fileName()));
}

// A stalled run, told where CI's output keeps it (QTest cuts a failure's message short; warnings are
// printed whole): the coordinator's warnings and trust lines, and each node's tail; the logs kept too.
void explainStall(const QByteArray& coordinatorLog, const SwarmNode& first, const SwarmNode& second) {
    keepLog(u"coordinator"_qs, coordinatorLog);
    keepLog(u"node-1"_qs, first.logTail(1'000'000));
    keepLog(u"node-2"_qs, second.logTail(1'000'000));
    QByteArrayList notable;
    for (const QByteArray& line : coordinatorLog.split('\n'))
        if (line.contains("trust:") || line.contains("warning") || line.contains("step "))
            notable << line.left(400);
    qWarning("coordinator, last %d of %lld notable lines:\n%s", 40, qlonglong(notable.size()),
             notable.mid(std::max<qsizetype>(0, notable.size() - 40)).join('\n').constData());
    qWarning("node-1 (tail):\n%s", first.logTail(2500).constData());
    qWarning("node-2 (tail):\n%s", second.logTail(2500).constData());
}

// Debian's libfaketime (package libfaketime), for this machine's architecture.
QString findLibFaketime() {
    for (const QString& dir : QDir(u"/usr/lib"_qs).entryList({u"*-linux-gnu*"_qs}, QDir::Dirs)) {
        const QString path = u"/usr/lib/%1/faketime/libfaketime.so.1"_qs.arg(dir);
        if (QFile::exists(path))
            return path;
    }
    return {};
}

// Every stored time of `query`'s rows (ordered as they happened) is at or after the one before.
QString firstStepBack(QSqlDatabase& db, const QString& query) {
    QSqlQuery q(query, db);
    qint64 previous = 0;
    int row = 0;
    while (q.next()) {
        const qint64 t = q.value(0).toLongLong();
        if (t < previous)
            return u"row %1 of \"%2\": %3 ms before the row before it"_qs.arg(row).arg(query).arg(previous -
                                                                                                  t);
        previous = t;
        ++row;
    }
    return row > 0 ? QString() : u"no rows: "_qs + query;
}

qint64 leaves(const QJsonObject& s) {
    return integer(s, u"leaves");
}

} // namespace

class TestClockStep final : public QObject {
    Q_OBJECT

    QString m_lib;
    QTemporaryDir m_dir;
    QString m_clockFile;

    void setClock(const QByteArray& offset) {
        QFile f(m_clockFile);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(offset + '\n');
    }

private Q_SLOTS:
    void initTestCase() {
        m_lib = findLibFaketime();
        if (m_lib.isEmpty())
            QSKIP("libfaketime is not installed (apt-get install faketime)");
        qputenv("OMP_NUM_THREADS", "1");
        m_clockFile = m_dir.filePath(u"clock"_qs);
        setClock("+0");
        // For every process this test starts (the test itself was loaded without it).
        qputenv("LD_PRELOAD", m_lib.toUtf8());
        qputenv("FAKETIME_TIMESTAMP_FILE", m_clockFile.toUtf8());
        qputenv("FAKETIME_CACHE_DURATION", "1");
        qputenv("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    }

    void anHourBackLosesNothing() {
        const QString runDir = m_dir.filePath(u"coordinator"_qs);
        const QStringList arguments{u"--data-dir"_qs,
                                    runDir,
                                    u"--model"_qs,
                                    u"tiny"_qs,
                                    u"--stages"_qs,
                                    u"2"_qs,
                                    u"--listen"_qs,
                                    u"127.0.0.1:0"_qs,
                                    u"--heartbeat-timeout-ms"_qs,
                                    u"3000"_qs,
                                    u"--credit-interval-ms"_qs,
                                    u"1000"_qs,
                                    u"--credit-escrow-ms"_qs,
                                    u"0"_qs};
        auto coordinator = std::make_unique<CoordinatorProcess>(arguments);
        QVERIFY2(coordinator->waitReady(), coordinator->err().right(3000).constData());
        const QString ca = runDir + u"/tls.crt"_qs;
        auto status = std::make_unique<StatusPoll>(coordinator->url(), ca);
        SwarmNode first(coordinator->url(), m_dir.filePath(u"node-1"_qs), ca,
                        m_dir.filePath(u"node-1.log"_qs));
        SwarmNode second(coordinator->url(), m_dir.filePath(u"node-2"_qs), ca,
                         m_dir.filePath(u"node-2.log"_qs));
        QVERIFY2(status->reached(15), qPrintable(describeSwarm(status->s)));

        // Every process's clock steps back an hour at once.
        setClock("-1h");
        QTest::qWait(2000);
        const qint64 steppedAt = status->step();
        const qint64 leftBefore = leaves(status->s);
        QVERIFY2(status->reached(steppedAt + 20, 180'000), qPrintable(describeSwarm(status->s)));
        QCOMPARE(leaves(status->s), leftBefore);
        for (const SwarmNode* node : {&first, &second})
            QVERIFY2(!node->logTail(1'000'000).contains("session dropped") &&
                         !node->logTail(1'000'000).contains("connecting again"),
                     node->logTail().constData());

        // A node that falls silent (frozen, its socket open) is still noticed within seconds.
        second.freeze(true);
        QVERIFY2(status->until([&](const QJsonObject& s) { return leaves(s) > leftBefore; }, 30'000),
                 qPrintable(describeSwarm(status->s) + u"\n"_qs +
                            QString::fromUtf8(coordinator->err().right(3000))));
        second.freeze(false);
        const qint64 thawedAt = status->step();
        if (!status->reached(thawedAt + 10, 180'000)) {
            // What the message cannot hold (QTest cuts it short): both sides' logs, kept for the reader.
            explainStall(coordinator->err() + coordinator->out(), first, second);
            QFAIL(qPrintable(describeSwarm(status->s)));
        }

        // A restart with the system clock still an hour back goes on from the stored times.
        // On the same port: the nodes come back to the address they know.
        QStringList again = arguments;
        again[again.indexOf(u"--listen"_qs) + 1] = u"127.0.0.1:%1"_qs.arg(QUrl(coordinator->url()).port());
        QCOMPARE(coordinator->terminate(30'000), 0);
        coordinator = std::make_unique<CoordinatorProcess>(again);
        QVERIFY2(coordinator->waitReady(), coordinator->err().right(3000).constData());
        QVERIFY2(coordinator->err().contains("the system clock reads"),
                 coordinator->err().right(3000).constData());
        status = std::make_unique<StatusPoll>(coordinator->url(), ca);
        const qint64 restartedAt = status->reached(0) ? status->step() : -1;
        if (!status->reached(restartedAt + 10, 240'000)) {
            explainStall(coordinator->err() + coordinator->out(), first, second);
            QFAIL(qPrintable(describeSwarm(status->s)));
        }
        QCOMPARE(first.stop(20'000), 0);
        QCOMPARE(second.stop(20'000), 0);
        QCOMPARE(coordinator->terminate(30'000), 0);

        // What the coordinator stored, in the order it happened, never goes back in time.
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(u"QSQLITE"_qs, u"clock"_qs);
            db.setDatabaseName(runDir + u"/coordinator.sqlite"_qs);
            QVERIFY(db.open());
            for (const QString& query :
                 {u"SELECT at FROM loss_history ORDER BY step"_qs,
                  u"SELECT issued_at FROM microbatches ORDER BY id"_qs,
                  u"SELECT issued_at FROM credit_receipts WHERE node_id = (SELECT MIN(node_id) FROM "
                  u"credit_receipts) ORDER BY seq"_qs,
                  u"SELECT issued_at FROM credit_receipts WHERE node_id = (SELECT MAX(node_id) FROM "
                  u"credit_receipts) ORDER BY seq"_qs}) {
                const QString wrong = firstStepBack(db, query);
                QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
            }
            // Receipts were still issued after the step (escrow went on releasing work).
            QSqlQuery late(u"SELECT COUNT(*) FROM credit_receipts WHERE issued_at > "
                           u"(SELECT at FROM loss_history WHERE step = %1)"_qs.arg(steppedAt + 20),
                           db);
            QVERIFY(late.next());
            QVERIFY2(late.value(0).toLongLong() > 0, "no receipt after the step");
            db.close();
        }
        QSqlDatabase::removeDatabase(u"clock"_qs);
        for (const SwarmNode* node : {&first, &second}) {
            const ProcessRun r =
                runProcess(nodeProgram(), {u"ledger"_qs, u"verify"_qs, u"--data-dir"_qs, node->dataDir()});
            QVERIFY2(r.exitCode == 0, QByteArray(r.out + r.err).constData());
        }
    }
};

QTEST_GUILESS_MAIN(TestClockStep)
#include "test_clock_step.moc"
