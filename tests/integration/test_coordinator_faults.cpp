// SPDX-License-Identifier: Apache-2.0
// Faults a running swarm survives with nothing acknowledged lost (issue 17), each with a real
// tessera-coordinator and two real nodes (two stages) training the tiny model:
//   - the coordinator's PostgreSQL server restarted mid-run (pg_ctl stop -m fast, 10 s down, start):
//     training goes on in memory meanwhile, what could not be written is written once the server is
//     back (the connection is opened again), and afterwards the database holds every step's loss —
//     none of the outage's missing — and every microbatch accounted for;
//   - the link between one node and the coordinator cut for 60 s and restored (a relay holds every
//     byte, as a cut cable would, and new connections get no answer): the stage waits, the node
//     notices the silence, connects again once the link is back, and training goes on; its ledger
//     keeps every receipt it had, and the coordinator's accounts balance;
//   - the coordinator's disk full (its --data-dir on a real 96 MiB tmpfs, every free byte taken mid-run):
//     a checkpoint that cannot be written leaves the previous one in use, database writes that fail are
//     kept and written once space returns; afterwards every step's loss is stored, a checkpoint is
//     published again, and the run resumes from its data dir;
//   - the run's token file rewritten under it mid-run (ids beyond the vocabulary): no microbatch is
//     issued from the changed file, /v1/status says why naming the file (the log says it once), and
//     once the file is put back training goes on with nothing lost.
#include "../bench/DelayRelay.h"
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "PostgresServer.h"
#include "SmallFilesystem.h"
#include "SwarmNode.h"
#include "SwarmStatus.h"
#include "TestSupport.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <QUrlQuery>

#include <memory>
#include <vector>

using namespace tessera;
using namespace tessera::test;

namespace {

QStringList coordinatorArguments(const QString& runDir, int port, const QStringList& extra = {}) {
    return QStringList{u"--data-dir"_qs, runDir,  u"--model"_qs,  u"tiny"_qs,
                       u"--stages"_qs,   u"2"_qs, u"--listen"_qs, u"127.0.0.1:%1"_qs.arg(port)} +
           extra;
}

// The two nodes (one a stage) every case trains with, in dir, trusting the coordinator's certificate.
std::vector<std::unique_ptr<SwarmNode>> twoNodes(const QString& url, const QTemporaryDir& dir,
                                                 const QString& runDir) {
    std::vector<std::unique_ptr<SwarmNode>> nodes;
    for (int i = 1; i <= 2; ++i)
        nodes.push_back(std::make_unique<SwarmNode>(url, dir.filePath(u"node-%1"_qs.arg(i)),
                                                    runDir + u"/tls.crt"_qs,
                                                    dir.filePath(u"node-%1.log"_qs.arg(i))));
    return nodes;
}

} // namespace

class TestCoordinatorFaults final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qputenv("OMP_NUM_THREADS", "1"); }

    void aPostgresRestartMidRunLosesNothing() {
        if (PostgresServer::findBinDir().isEmpty())
            QSKIP(PostgresServer::kNotInstalled);
        Result<std::unique_ptr<PostgresServer>> server = PostgresServer::start();
        QVERIFY2(server, server ? "" : server.message().c_str());
        Result<QString> dbUrl = (*server)->createDatabase();
        QVERIFY2(dbUrl, dbUrl ? "" : dbUrl.message().c_str());
        QTemporaryDir dir;
        const QString runDir = dir.filePath(u"coordinator"_qs);
        CoordinatorProcess coordinator(coordinatorArguments(runDir, 0, {u"--db"_qs, *dbUrl}));
        QVERIFY2(coordinator.waitReady(), coordinator.err().right(3000).constData());
        StatusPoll status(coordinator.url(), runDir + u"/tls.crt"_qs);
        std::vector<std::unique_ptr<SwarmNode>> nodes = twoNodes(coordinator.url(), dir, runDir);
        QVERIFY2(status.reached(15), qPrintable(describeSwarm(status.s)));

        QVERIFY((*server)->stop());
        const qint64 downAt = status.step();
        QTest::qWait(10'000);
        QVERIFY2(coordinator.err().contains("kept for the next try"),
                 coordinator.err().right(3000).constData());
        QVERIFY((*server)->startAgain());
        QVERIFY2(status.reached(downAt + 20), qPrintable(describeSwarm(status.s)));
        QVERIFY2(coordinator.err().contains("connected to"), coordinator.err().right(3000).constData());
        for (auto& node : nodes)
            QCOMPARE(node->stop(20'000), 0);
        QCOMPARE(coordinator.terminate(30'000), 0);
        const qint64 last = status.step();

        // The database, read directly: a loss for every step up to the last one the coordinator
        // reported, the outage's included, and every microbatch either completed or abandoned.
        QSqlDatabase db = QSqlDatabase::addDatabase(u"QPSQL"_qs, u"faults"_qs);
        const QUrl url(*dbUrl);
        db.setUserName(url.userName());
        db.setDatabaseName(url.path().mid(1));
        db.setConnectOptions(u"host=%1"_qs.arg(QUrlQuery(url).queryItemValue(u"host"_qs)));
        QVERIFY2(db.open(), qPrintable(db.lastError().text()));
        {
            QSqlQuery q(u"SELECT COUNT(DISTINCT step), MIN(step), MAX(step) FROM loss_history"_qs, db);
            QVERIFY(q.next());
            QVERIFY2(
                q.value(2).toLongLong() >= last,
                qPrintable(u"last step stored %1, reported %2"_qs.arg(q.value(2).toLongLong()).arg(last)));
            QCOMPARE(q.value(0).toLongLong(), q.value(2).toLongLong() - q.value(1).toLongLong() + 1);
            QSqlQuery m(u"SELECT COUNT(*) FROM microbatches WHERE state = 'completed'"_qs, db);
            QVERIFY(m.next());
            QVERIFY2(m.value(0).toLongLong() >= last, qPrintable(m.value(0).toString()));
            QSqlQuery inFlight(u"SELECT COUNT(*) FROM microbatches WHERE state = 'in_flight'"_qs, db);
            QVERIFY(inFlight.next());
            QCOMPARE(inFlight.value(0).toLongLong(), 0);
        }
        db.close();
        db = QSqlDatabase();
        QSqlDatabase::removeDatabase(u"faults"_qs);
    }

    void aLinkCutFor60SecondsIsSurvived() {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(u"coordinator"_qs);
        CoordinatorProcess coordinator(coordinatorArguments(runDir, 0));
        QVERIFY2(coordinator.waitReady(), coordinator.err().right(3000).constData());
        DelayRelay relay(quint16(QUrl(coordinator.url()).port()),
                         DelayRelay::Link{std::chrono::microseconds(0), 0});
        QCOMPARE(QString::fromStdString(relay.start()), QString());
        QUrl viaRelay(coordinator.url());
        viaRelay.setPort(relay.port());
        StatusPoll status(coordinator.url(), runDir + u"/tls.crt"_qs);
        SwarmNode direct(coordinator.url(), dir.filePath(u"direct"_qs), runDir + u"/tls.crt"_qs,
                         dir.filePath(u"direct.log"_qs));
        SwarmNode cut(viaRelay.toString(), dir.filePath(u"cut"_qs), runDir + u"/tls.crt"_qs,
                      dir.filePath(u"cut.log"_qs));
        QVERIFY2(status.reached(15), qPrintable(describeSwarm(status.s)));

        relay.cut(true);
        const qint64 cutAt = status.step();
        QTest::qWait(60'000);
        // The other stage had no node meanwhile: at most the step in progress went on.
        QVERIFY2(status.reached(0) && status.step() <= cutAt + 2, qPrintable(describeSwarm(status.s)));
        relay.cut(false);
        if (!status.reached(cutAt + 15, 180'000)) {
            // What the message cannot hold (QTest cuts it short): both sides' logs, kept for the reader.
            for (const auto& [name, log] :
                 {std::pair{u"coordinator"_qs, QByteArray(coordinator.err() + coordinator.out())},
                  std::pair{u"cut"_qs, cut.logTail(1'000'000)},
                  std::pair{u"direct"_qs, direct.logTail(1'000'000)}}) {
                QFile kept(QDir::temp().filePath(u"tessera-link-cut-%1.log"_qs.arg(name)));
                if (kept.open(QIODevice::WriteOnly | QIODevice::Truncate) && kept.write(log) >= 0)
                    qWarning("kept: %s", qPrintable(kept.fileName()));
            }
            QFAIL(qPrintable(describeSwarm(status.s)));
        }
        QVERIFY2(cut.logTail(200'000).contains("connecting again") ||
                     cut.logTail(200'000).contains("session dropped"),
                 cut.logTail().constData());
        QCOMPARE(direct.stop(20'000), 0);
        QCOMPARE(cut.stop(20'000), 0);
        QCOMPARE(coordinator.terminate(30'000), 0);
        // The node's ledger still verifies, every receipt chained (none lost or duplicated).
        for (const QString& node : {u"direct"_qs, u"cut"_qs}) {
            const ProcessRun r =
                runProcess(nodeProgram(), {u"ledger"_qs, u"verify"_qs, u"--data-dir"_qs, dir.filePath(node)});
            QVERIFY2(r.exitCode == 0, QByteArray(r.out + r.err).constData());
        }
    }

    void aFullDiskLosesNothingAcknowledged() {
        SmallFilesystem fs;
        const Status mounted = fs.mount(96 << 20);
        QVERIFY2(mounted, mounted ? "" : mounted.message().c_str());
        QTemporaryDir dir;
        const QString runDir = fs.path() + u"/coordinator"_qs;
        const QStringList arguments = coordinatorArguments(runDir, 0, {u"--checkpoint-every"_qs, u"10"_qs});
        auto coordinator = std::make_unique<CoordinatorProcess>(arguments);
        QVERIFY2(coordinator->waitReady(), coordinator->err().right(3000).constData());
        StatusPoll status(coordinator->url(), runDir + u"/tls.crt"_qs);
        std::vector<std::unique_ptr<SwarmNode>> nodes = twoNodes(coordinator->url(), dir, runDir);
        QVERIFY2(status.reached(15), qPrintable(describeSwarm(status.s)));

        const Result<qint64> taken = fs.fill();
        QVERIFY2(taken, taken ? "" : taken.message().c_str());
        const qint64 fullAt = status.step();
        // At least one checkpoint (every 10 steps) falls in the full disk's time.
        QVERIFY2(status.reached(fullAt + 15), qPrintable(describeSwarm(status.s)));
        QVERIFY2(coordinator->err().contains("writing the checkpoint"),
                 coordinator->err().right(3000).constData());
        fs.unfill();
        const qint64 freedAt = status.step();
        QVERIFY2(status.reached(freedAt + 15), qPrintable(describeSwarm(status.s)));
        for (int stage = 0; stage < 2; ++stage)
            for (const QJsonValue& v : status.s.value(u"stages").toArray())
                if (v.toObject().value(u"stage").toInt() == stage)
                    QVERIFY2(integer(v.toObject(), u"checkpoint_step") > freedAt,
                             qPrintable(describeSwarm(status.s)));
        for (auto& node : nodes)
            QCOMPARE(node->stop(20'000), 0);
        QCOMPARE(coordinator->terminate(30'000), 0);
        const qint64 last = status.step();
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(u"QSQLITE"_qs, u"full"_qs);
            db.setDatabaseName(runDir + u"/coordinator.sqlite"_qs);
            QVERIFY(db.open());
            QSqlQuery q(u"SELECT COUNT(DISTINCT step), MIN(step), MAX(step) FROM loss_history"_qs, db);
            QVERIFY(q.next());
            QVERIFY2(q.value(2).toLongLong() >= last, qPrintable(q.value(2).toString()));
            QCOMPARE(q.value(0).toLongLong(), q.value(2).toLongLong() - q.value(1).toLongLong() + 1);
            db.close();
        }
        QSqlDatabase::removeDatabase(u"full"_qs);
        // Nothing half written is trusted: the run resumes from its data dir.
        coordinator = std::make_unique<CoordinatorProcess>(arguments);
        QVERIFY2(coordinator->waitReady(), coordinator->err().right(3000).constData());
        QVERIFY(coordinator->out().contains("resumed the run"));
        QCOMPARE(coordinator->terminate(30'000), 0);
    }

    void aTokenFileChangedUnderTheRunStopsItsMicrobatchesAndSaysWhy() {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(u"coordinator"_qs);
        const QString tokens = dir.filePath(u"tokens.u16"_qs);
        QByteArray good(2 * 200'000, '\0');
        for (int i = 0; i < 200'000; ++i)
            good[2 * i] = char((i * 7) % 256); // ids below tiny's 256, little-endian
        const auto write = [&](const QByteArray& bytes) {
            QFile f(tokens);
            return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
        };
        QVERIFY(write(good));
        CoordinatorProcess coordinator(
            coordinatorArguments(runDir, 0, {u"--dataset"_qs, u"tokens16:"_qs + tokens}));
        QVERIFY2(coordinator.waitReady(), coordinator.err().right(3000).constData());
        StatusPoll status(coordinator.url(), runDir + u"/tls.crt"_qs);
        std::vector<std::unique_ptr<SwarmNode>> nodes = twoNodes(coordinator.url(), dir, runDir);
        QVERIFY2(status.reached(5), qPrintable(describeSwarm(status.s)));
        QVERIFY(status.s.value(u"data_error").isNull());

        QByteArray changed = good;
        for (int i = 0; i < 200'000; ++i)
            changed[2 * i + 1] = 1; // every id 256 or more
        QVERIFY(write(changed));
        QVERIFY2(status.until([](const QJsonObject& s) { return s.value(u"data_error").isString(); }, 60'000),
                 qPrintable(describeSwarm(status.s)));
        const QString why = status.s.value(u"data_error").toString();
        QVERIFY2(why.contains(tokens) && why.contains(u"changed since it was checked"), qPrintable(why));
        // Nothing is issued from the changed file: what was in flight completes, then the count stays.
        QVERIFY(status.until(
            [](const QJsonObject& s) {
                return integer(s.value(u"microbatches").toObject(), u"in_flight") == 0;
            },
            60'000));
        const qint64 issued = integer(status.s.value(u"microbatches").toObject(), u"issued");
        QTest::qWait(3'000);
        QVERIFY(status.until([](const QJsonObject&) { return true; }, 10'000));
        QCOMPARE(integer(status.s.value(u"microbatches").toObject(), u"issued"), issued);
        QCOMPARE(coordinator.err().count("the training data failed"), 1);

        QVERIFY(write(good));
        const qint64 resumedAt = status.step();
        QVERIFY2(status.reached(resumedAt + 3), qPrintable(describeSwarm(status.s)));
        QVERIFY(status.s.value(u"data_error").isNull());
        QVERIFY(coordinator.err().contains("the training data reads again"));
        const QJsonObject mb = status.s.value(u"microbatches").toObject();
        QCOMPARE(integer(mb, u"issued"),
                 integer(mb, u"completed") + integer(mb, u"abandoned") + integer(mb, u"in_flight"));
        for (auto& node : nodes)
            QCOMPARE(node->stop(20'000), 0);
        QCOMPARE(coordinator.terminate(30'000), 0);
    }
};

int main(int argc, char** argv) {
    SmallFilesystem::reexecUnsharedIfNeeded(argc, argv);
    QCoreApplication app(argc, argv);
    TestCoordinatorFaults test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "test_coordinator_faults.moc"
