// SPDX-License-Identifier: Apache-2.0
// The real tessera-node process against the real tessera-coordinator on loopback (TLS with the
// coordinator's own certificate, trusted through --coordinator-ca): first run to Working and
// the status a user sees; a download cut off by killing the coordinator and resumed; a shard
// damaged on the server refused, then fetched again once repaired; a coordinator presenting
// another key refused; the node SIGKILLed mid-download and mid-ledger-write and restarted;
// pause/resume/stop through the control socket, and a wrong control token refused.
#include "CoordinatorProcess.h"
#include "NodeProcess.h"
#include "TestSupport.h"
#include "common/Identity.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/Database.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocalSocket>
#include <QProcess>
#include <QRegularExpression>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <memory>

using namespace tessera;
using namespace tessera::test;

namespace {

QByteArray flipByte(const QString& path, qint64 at) {
    QFile f(path);
    if (!f.open(QIODevice::ReadWrite) || !f.seek(at))
        return {};
    QByteArray b = f.read(1);
    const QByteArray original = b;
    b[0] = char(b[0] ^ 0x5a);
    f.seek(at);
    f.write(b);
    return original;
}

} // namespace

class TestNodeProcess final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void firstRunReachesWorkingAndControlsWork();
    void downloadResumesAfterCoordinatorKilled();
    void damagedShardRefusedThenFetchedAgain();
    void otherCoordinatorKeyRefused();
    void killedMidLedgerWriteLosesNothing();

private:
    QJsonObject status(const QString& dataDir);
    bool waitState(const QString& dataDir, const QString& state, int ms, NodeProcess* node = nullptr);
    std::unique_ptr<CoordinatorProcess> startCoordinator(const QString& runDir, int port = 0);

    QTemporaryDir m_dir;
};

void TestNodeProcess::initTestCase() {
    QVERIFY(m_dir.isValid());
}

std::unique_ptr<CoordinatorProcess> TestNodeProcess::startCoordinator(const QString& runDir, int port) {
    auto c = std::make_unique<CoordinatorProcess>(QStringList{
        u"--data-dir"_qs, runDir, u"--listen"_qs, u"127.0.0.1:"_qs + QString::number(port), u"--model"_qs,
        u"tiny"_qs, u"--stages"_qs, u"2"_qs, u"--heartbeat-timeout-ms"_qs, u"3000"_qs});
    if (!c->waitReady())
        qWarning("coordinator did not start: %s", c->err().constData());
    return c;
}

QJsonObject TestNodeProcess::status(const QString& dataDir) {
    const ProcessRun r = runProcess(nodeProgram(), {u"status"_qs, u"--json"_qs, u"--data-dir"_qs, dataDir},
                                    ProcessOptions{QProcessEnvironment::systemEnvironment(), false, 10'000});
    return QJsonDocument::fromJson(r.out).object();
}

bool TestNodeProcess::waitState(const QString& dataDir, const QString& state, int ms, NodeProcess* node) {
    const bool reached =
        QTest::qWaitFor([&] { return status(dataDir).value(u"state").toString() == state; }, ms);
    if (!reached && node)
        qWarning("node log:\n%s", node->log().right(4000).constData());
    return reached;
}

// A newcomer's first run: benchmark, admission, download, session — Working, with the status a
// user reads; then pause and resume through the control socket, a wrong token refused, and stop.
void TestNodeProcess::firstRunReachesWorkingAndControlsWork() {
    const QString run = m_dir.filePath(u"c1"_qs);
    const QString data = m_dir.filePath(u"n1"_qs);
    auto coordinator = startCoordinator(run);
    QVERIFY(coordinator);
    NodeProcess node(coordinator->url(), data, run + u"/tls.crt"_qs);
    QVERIFY(waitState(data, u"Working"_qs, 60'000, &node));

    const QJsonObject s = status(data);
    QCOMPARE(s.value(u"node_id").toString().size(), 64);
    QVERIFY(s.value(u"stage").toInt(-1) >= 0);
    const QJsonObject download = s.value(u"download").toObject();
    QVERIFY(download.value(u"total").toInteger() > 0);
    QCOMPARE(download.value(u"bytes").toInteger(), download.value(u"total").toInteger());
    QVERIFY(s.contains(u"compute_share"));
    QVERIFY(s.contains(u"credits_total"));
    QCOMPARE(fileMode(data + u"/node.key"_qs), 0600);
    QCOMPARE(fileMode(data + u"/session.json"_qs), 0600);
    QVERIFY(QFile::exists(data + u"/node.log"_qs));

    // Soft pause and resume without rejoining: the node id and stage stay.
    ProcessRun r = runProcess(nodeProgram(), {u"pause"_qs, u"--data-dir"_qs, data});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(waitState(data, u"Paused"_qs, 10'000, &node));
    r = runProcess(nodeProgram(), {u"resume"_qs, u"--data-dir"_qs, data});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(waitState(data, u"Working"_qs, 10'000, &node));
    QCOMPARE(status(data).value(u"node_id").toString(), s.value(u"node_id").toString());

    // Someone without the token: refused.
    QLocalSocket intruder;
    const QString socketPath = data + u"/control.sock"_qs;
    intruder.connectToServer(socketPath);
    QVERIFY(intruder.waitForConnected(5000));
    intruder.write("{\"token\":\"00000000000000000000000000000000\",\"command\":\"stop\"}\n");
    QVERIFY(QTest::qWaitFor(
        [&] { return intruder.canReadLine() || intruder.state() != QLocalSocket::ConnectedState; }, 5000));
    const QJsonObject refused = QJsonDocument::fromJson(intruder.readLine()).object();
    QCOMPARE(refused.value(u"ok").toBool(true), false);
    QVERIFY(refused.value(u"error").toString().contains(u"token"));
    QVERIFY(node.running());

    // Hard pause: the process exits (all its memory freed); the next start resumes the same
    // session without a new admission or download.
    r = runProcess(nodeProgram(), {u"pause"_qs, u"--hard"_qs, u"--data-dir"_qs, data});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(node.waitExit(15'000), 0);
    NodeProcess resumed(coordinator->url(), data, run + u"/tls.crt"_qs);
    QVERIFY(waitState(data, u"Working"_qs, 60'000, &resumed));
    QVERIFY2(resumed.log().contains("resuming the session"), resumed.log().constData());
    QVERIFY(resumed.log().contains("is already here"));
    QVERIFY(!resumed.log().contains("admitted as"));
    QCOMPARE(status(data).value(u"node_id").toString(), s.value(u"node_id").toString());

    r = runProcess(nodeProgram(), {u"stop"_qs, u"--data-dir"_qs, data});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(resumed.waitExit(15'000), 0);
    // `status` of a node that is not running says so.
    r = runProcess(nodeProgram(), {u"status"_qs, u"--data-dir"_qs, data});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains("no tessera-node is running"), r.err.constData());
}

// The coordinator is SIGKILLed while the node downloads (slowed to 256 KiB/s); it comes back on
// the same port; the node resumes and the installed shard is the server's, byte for byte. Then
// the node itself is SIGKILLed mid-download and restarted: it resumes too.
void TestNodeProcess::downloadResumesAfterCoordinatorKilled() {
    const QString run = m_dir.filePath(u"c2"_qs);
    const QString data = m_dir.filePath(u"n2"_qs);
    auto coordinator = startCoordinator(run);
    QVERIFY(coordinator);
    const int port = QUrl(coordinator->url()).port();
    auto node = std::make_unique<NodeProcess>(coordinator->url(), data, run + u"/tls.crt"_qs,
                                              QStringList{u"--max-download-rate"_qs, u"256"_qs});
    auto midway = [&] {
        const QJsonObject d = status(data).value(u"download").toObject();
        const double total = d.value(u"total").toDouble();
        return total > 0 && d.value(u"bytes").toDouble() > 0.2 * total &&
               d.value(u"bytes").toDouble() < 0.6 * total;
    };
    QVERIFY2(QTest::qWaitFor(midway, 60'000), node->log().right(3000).constData());
    coordinator->kill();
    QTest::qWait(1500);
    QVERIFY(node->running());
    coordinator = startCoordinator(run, port);
    QVERIFY(!coordinator->url().isEmpty());

    // Killed itself midway through the rest: the next start resumes again.
    QVERIFY2(QTest::qWaitFor(
                 [&] { return status(data).value(u"download").toObject().value(u"bytes").toDouble() > 0; },
                 30'000),
             node->log().right(3000).constData());
    node->kill();
    node = std::make_unique<NodeProcess>(coordinator->url(), data, run + u"/tls.crt"_qs,
                                         QStringList{u"--max-download-rate"_qs, u"1024"_qs});
    QVERIFY(waitState(data, u"Working"_qs, 60'000, node.get()));
    QVERIFY2(node->log().contains("node: resuming"), node->log().constData());

    const QJsonObject s = status(data);
    const QString file = s.value(u"download").toObject().value(u"file").toString();
    QCOMPARE(readFile(data + u"/shards/"_qs + file), readFile(run + u"/shards/"_qs + file));
}

// A byte of the server's shard is damaged: the node refuses what it downloads and never loads
// it; once the operator repairs the file, the node fetches it again and works.
void TestNodeProcess::damagedShardRefusedThenFetchedAgain() {
    const QString run = m_dir.filePath(u"c3"_qs);
    const QString data = m_dir.filePath(u"n3"_qs);
    auto coordinator = startCoordinator(run);
    QVERIFY(coordinator);
    // Both stages' shards are damaged, whichever the node is given.
    QStringList shards = QDir(run + u"/shards"_qs).entryList({u"*.safetensors"_qs}, QDir::Files);
    QCOMPARE(shards.size(), 2);
    QList<QByteArray> originals;
    for (const QString& f : shards)
        originals << flipByte(run + u"/shards/"_qs + f, 5000);

    NodeProcess node(coordinator->url(), data, run + u"/tls.crt"_qs);
    QVERIFY2(QTest::qWaitFor([&] { return node.log().contains("does not match"); }, 60'000),
             node.log().constData());
    QCOMPARE(status(data).value(u"state").toString(), u"Downloading"_qs);
    QVERIFY(QDir(data + u"/shards"_qs).entryList({u"*.safetensors"_qs}, QDir::Files).isEmpty());

    for (int i = 0; i < shards.size(); ++i)
        flipByte(run + u"/shards/"_qs + shards[i], 5000); // xor again: repaired
    QVERIFY(waitState(data, u"Working"_qs, 90'000, &node));
}

// The node pinned coordinator A's key; coordinator B (another run, another key) at the URL it
// is given is refused with a message naming both keys, and the node exits with code 3.
void TestNodeProcess::otherCoordinatorKeyRefused() {
    const QString data = m_dir.filePath(u"n4"_qs);
    {
        auto a = startCoordinator(m_dir.filePath(u"c4a"_qs));
        NodeProcess node(a->url(), data, m_dir.filePath(u"c4a/tls.crt"_qs));
        QVERIFY(waitState(data, u"Working"_qs, 60'000, &node));
        QCOMPARE(runProcess(nodeProgram(), {u"stop"_qs, u"--data-dir"_qs, data}).exitCode, 0);
        QCOMPARE(node.waitExit(15'000), 0);
    }
    auto b = startCoordinator(m_dir.filePath(u"c4b"_qs));
    NodeProcess node(b->url(), data, m_dir.filePath(u"c4b/tls.crt"_qs));
    QCOMPARE(node.waitExit(60'000), 3);
    const QByteArray log = node.log();
    QVERIFY2(log.contains("refusing the coordinator"), log.constData());
    QVERIFY(log.contains(b->printed("coordinator key").toUtf8()));
}

// Receipts granted to the node arrive in pages while it is SIGKILLed at random moments, five
// times; after each restart the ledger passes SQLite's integrity_check and `ledger verify`, and
// holds every receipt the node had logged as stored.
void TestNodeProcess::killedMidLedgerWriteLosesNothing() {
    const QString run = m_dir.filePath(u"c5"_qs);
    const QString data = m_dir.filePath(u"n5"_qs);
    auto coordinator = startCoordinator(run);
    QVERIFY(coordinator);
    const QStringList fast{u"--credits-poll-ms"_qs, u"200"_qs};
    auto node = std::make_unique<NodeProcess>(coordinator->url(), data, run + u"/tls.crt"_qs, fast);
    QVERIFY(waitState(data, u"Working"_qs, 60'000, node.get()));
    const QString nodeId = status(data).value(u"node_id").toString();

    // Grant receipts straight into the coordinator's database, signed with its key, as the
    // data plane will.
    Result<Identity> key = Identity::load(run + u"/coordinator.key"_qs);
    QVERIFY2(key, key ? "" : key.message().c_str());
    Result<std::unique_ptr<coordinator::Database>> db = coordinator::Database::open(QString(), run);
    QVERIFY2(db, db ? "" : db.message().c_str());
    coordinator::CreditLedger ledger(**db);
    const auto sign = [&](const QByteArray& payload) -> Result<QByteArray> { return key->sign(payload); };
    qint64 granted = 0;
    auto grant = [&](int n) {
        for (int i = 0; i < n; ++i)
            if (ledger.append(nodeId, QDateTime::currentMSecsSinceEpoch(), 3'000'000'000'000, 3000, sign))
                ++granted;
    };

    static const QRegularExpression storedLine(u"stored receipts through #(\\d+)"_qs);
    for (int round = 0; round < 5; ++round) {
        grant(1500);
        QTest::qWait(100 + round * 150);
        node->kill();
        qint64 acked = 0;
        for (auto it = storedLine.globalMatch(QString::fromUtf8(node->log())); it.hasNext();)
            acked = std::max(acked, it.next().captured(1).toLongLong());

        QSqlDatabase check = QSqlDatabase::addDatabase(u"QSQLITE"_qs, u"check"_qs + QString::number(round));
        check.setDatabaseName(data + u"/ledger.sqlite"_qs);
        QVERIFY(check.open());
        QSqlQuery q(check);
        QVERIFY(q.exec(u"PRAGMA integrity_check"_qs) && q.next());
        QCOMPARE(q.value(0).toString(), u"ok"_qs);
        QVERIFY(q.exec(u"SELECT COALESCE(MAX(seq), 0) FROM receipts"_qs) && q.next());
        const qint64 stored = q.value(0).toLongLong();
        q.finish();
        check.close();
        QVERIFY2(stored >= acked, qPrintable(u"stored %1 < acknowledged %2"_qs.arg(stored).arg(acked)));

        const ProcessRun verify =
            runProcess(nodeProgram(), {u"ledger"_qs, u"verify"_qs, u"--data-dir"_qs, data});
        QVERIFY2(verify.exitCode == 0, verify.err.constData());
        node = std::make_unique<NodeProcess>(coordinator->url(), data, run + u"/tls.crt"_qs, fast);
        QVERIFY(waitState(data, u"Working"_qs, 60'000, node.get()));
    }
    // In the end, everything granted arrives.
    QVERIFY2(QTest::qWaitFor([&] { return status(data).value(u"ledger_receipts").toInteger() == granted; },
                             60'000),
             qPrintable(QString::number(status(data).value(u"ledger_receipts").toInteger())));
}

QTEST_GUILESS_MAIN(TestNodeProcess)
#include "test_node_process.moc"
