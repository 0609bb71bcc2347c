// SPDX-License-Identifier: Apache-2.0
// A new run's coordinator answers at once while it writes the initial weights (Preparing →
// Serving), with the real tessera-coordinator and tessera-node processes: /v1/status and /v1/info say
// "preparing" with the bytes written; admission, its challenge, the shard routes and the session
// upgrade answer 503 with Retry-After and words a person can read; a node waits (Waitlisted) instead
// of giving up. SIGTERM while preparing stops it within seconds, records nothing, and the next start
// prepares again and serves: a node is then admitted. A writer that fills the disk ends the process
// with exit 1 and says so. A restart listens before it reads its checkpoints back (over a minute at
// 8b) and answers meanwhile; stopped then, it exits cleanly; a checkpoint damaged while it was down,
// with no version before it, is named in the error it exits with. The training data is checked
// beside the weights, on a thread of its own, and a bad token in it is named. The `small` preset (124M
// parameters, about 500 MB of shards) takes 8 to 20 s to write on a two-core machine: long enough to see
// every step, short enough for the suite.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "NodeProcess.h"
#include "SmallFilesystem.h"
#include "common/Identity.h"
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QNetworkAccessManager>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

using namespace tessera;
using test::HttpReply;

class TestCoordinatorPreparation final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void answersWhilePreparingStopsCleanlyAndPreparesAgain();
    void aRestartListensFirstAndChecksItsCheckpointsMeanwhile();
    void aWriterThatFillsTheDiskEndsTheStart();
    void theTrainingDataIsCheckedBesideTheWeights();

private:
    QStringList args(const QString& dataDir, const QStringList& extra = {}) const {
        return QStringList{QStringLiteral("--data-dir"), dataDir, QStringLiteral("--listen"),
                           QStringLiteral("127.0.0.1:0")} +
               extra;
    }
    HttpReply get(const CoordinatorProcess& c, const QString& path) {
        return test::httpRequest(m_net, m_ssl, c.url() + path);
    }
    void trust(const QString& dataDir) {
        m_ssl = QSslConfiguration::defaultConfiguration();
        m_ssl.setCaCertificates(QSslCertificate::fromPath(dataDir + QStringLiteral("/tls.crt"), QSsl::Pem));
    }
    // The status line a WebSocket upgrade of /v1/session gets ("HTTP/1.1 503 Service Unavailable").
    QByteArray sessionUpgradeStatus(const CoordinatorProcess& c);
    static int storedVersions(const QString& dataDir);
    // The nice value of each of the process's threads named `name`, by thread id (Linux's /proc).
    static QMap<qint64, int> threadNices(qint64 pid, const QByteArray& name);

    QTemporaryDir m_dir;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
};

void TestCoordinatorPreparation::initTestCase() {
    QVERIFY(m_dir.isValid());
}

QByteArray TestCoordinatorPreparation::sessionUpgradeStatus(const CoordinatorProcess& c) {
    const QUrl url(c.url());
    QSslSocket socket;
    socket.setSslConfiguration(m_ssl);
    socket.connectToHostEncrypted(url.host(), quint16(url.port()));
    if (!socket.waitForEncrypted(10'000))
        return "TLS: " + socket.errorString().toUtf8();
    socket.write(
        "GET /v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    QByteArray answer;
    (void)QTest::qWaitFor(
        [&] {
            answer += socket.readAll();
            return answer.contains("\r\n") || socket.state() != QAbstractSocket::ConnectedState;
        },
        10'000);
    return answer.left(answer.indexOf("\r\n"));
}

int TestCoordinatorPreparation::storedVersions(const QString& dataDir) {
    int n = -1;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("check"));
        db.setDatabaseName(dataDir + QStringLiteral("/coordinator.sqlite"));
        if (db.open()) {
            QSqlQuery q(QStringLiteral("SELECT COUNT(*) FROM stage_versions"), db);
            if (q.next())
                n = q.value(0).toInt();
        }
    }
    QSqlDatabase::removeDatabase(QStringLiteral("check"));
    return n;
}

QMap<qint64, int> TestCoordinatorPreparation::threadNices(qint64 pid, const QByteArray& name) {
    QMap<qint64, int> nices;
    const QString tasks = QStringLiteral("/proc/%1/task").arg(pid);
    for (const QString& tid : QDir(tasks).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile stat(tasks + u'/' + tid + u"/stat"_qs);
        if (!stat.open(QIODevice::ReadOnly))
            continue; // the thread has ended
        const QByteArray line = stat.readAll();
        const qsizetype open = line.indexOf('('), close = line.lastIndexOf(')');
        if (open < 0 || close < open || line.mid(open + 1, close - open - 1) != name)
            continue;
        // After "(comm) ": state is field 3 of proc(5)'s stat, nice field 19.
        const QList<QByteArray> fields = line.mid(close + 2).split(' ');
        if (fields.size() > 16)
            nices.insert(tid.toLongLong(), fields.at(16).toInt());
    }
    return nices;
}

void TestCoordinatorPreparation::answersWhilePreparingStopsCleanlyAndPreparesAgain() {
    const QString dir = m_dir.filePath(QStringLiteral("small"));
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    {
        QElapsedTimer started;
        started.start();
        CoordinatorProcess first(args(
            dir, {QStringLiteral("--model"), QStringLiteral("small"), QStringLiteral("--stages"), u"2"_qs}));
        QVERIFY2(first.waitListening(), first.err().constData());
        // It answers before a single stage is written, not after (it once took minutes at 8b).
        QVERIFY2(started.elapsed() < 30'000, QByteArray::number(started.elapsed()).constData());
        QVERIFY2(first.out().contains("creating the run of model 'small'"), first.out().constData());
        trust(dir);

        const QJsonObject status = get(first, u"/v1/status"_qs).json();
        QCOMPARE(status.value(u"state").toString(), QStringLiteral("preparing"));
        const QJsonObject progress = status.value(u"preparing").toObject();
        const qint64 total = progress.value(u"bytes_total").toInteger();
        QVERIFY2(total > qint64(400) << 20, QJsonDocument(status).toJson().constData()); // ~500 MB in f32
        QVERIFY(progress.value(u"bytes_written").toInteger() < total);
        QVERIFY(progress.value(u"percent").toDouble() < 100);
        // The weights are made in the background (nice 10, every thread of the writer's), so that they
        // take the cores only when serving does not want them; the main thread stays at nice 0.
        const QList<int> writers = threadNices(first.pid(), "initial shards").values();
        QString writerNices;
        for (int nice : writers)
            writerNices += QString::number(nice) + u' ';
        if (!writers.isEmpty() ||
            get(first, u"/v1/status"_qs).json().value(u"state").toString() == u"preparing")
            QVERIFY2(!writers.isEmpty() && writers.count(10) == writers.size(),
                     qPrintable(u"nice of the writer's threads: "_qs + writerNices));
        QCOMPARE(threadNices(first.pid(), "tessera-coordin").value(first.pid(), -1), 0); // the main thread
        const QJsonObject info = get(first, u"/v1/info"_qs).json();
        QCOMPARE(info.value(u"state").toString(), QStringLiteral("preparing"));
        QVERIFY(!info.value(u"coordinator_key").toString().isEmpty());
        QCOMPARE(get(first, u"/"_qs).status, 200); // the operator's page

        // Admission waits: 503, Retry-After, and what is happening in words.
        const HttpReply refused = test::admitNode(m_net, m_ssl, first.url(), *id);
        QCOMPARE(refused.status, 503);
        const int retryAfter = refused.headers.value("retry-after").toInt();
        QVERIFY2(retryAfter >= 5 && retryAfter <= 60, refused.headers.value("retry-after").constData());
        QCOMPARE(refused.json().value(u"retry_after").toInt(), retryAfter);
        QVERIFY2(refused.error().contains(u"preparing this run's initial weights") &&
                     refused.error().contains(u"% done") && refused.error().contains(u"try again"),
                 qPrintable(refused.error()));
        const HttpReply admit =
            test::httpRequest(m_net, m_ssl, first.url() + u"/v1/admission"_qs, "POST", QByteArray("{}"));
        QCOMPARE(admit.status, 503);
        QVERIFY(admit.headers.contains("retry-after"));
        QCOMPARE(get(first, u"/v1/shards/0/manifest"_qs).status, 503);
        QCOMPARE(get(first, u"/v1/shards/0/1/stage-0-v1.safetensors"_qs).status, 503);
        QCOMPARE(sessionUpgradeStatus(first), QByteArray("HTTP/1.1 503 Service Unavailable"));

        // Stopped in the middle of it.
        const QJsonObject before = get(first, u"/v1/status"_qs).json();
        QCOMPARE(before.value(u"state").toString(), QStringLiteral("preparing"));
        QElapsedTimer stopping;
        stopping.start();
        QCOMPARE(first.terminate(10'000), 0);
        QVERIFY2(stopping.elapsed() < 5'000, QByteArray::number(stopping.elapsed()).constData());
        QVERIFY2(first.err().contains("the next start writes them again"), first.err().constData());
        QVERIFY(!first.out().contains("\nready: "));
    }
    // Nothing recorded: the next start prepares again (the run's model comes from run.json).
    QCOMPARE(storedVersions(dir), 0);

    CoordinatorProcess again(args(dir));
    QVERIFY2(again.waitListening(), again.err().constData());
    QCOMPARE(get(again, u"/v1/status"_qs).json().value(u"state").toString(), QStringLiteral("preparing"));

    // A node asks, is told to wait, and waits: not refused, not exited. (A machine that writes the
    // weights before the node has measured itself and asked shows nothing here.)
    {
        NodeProcess node(again.url(), m_dir.filePath(QStringLiteral("node")), dir + u"/tls.crt"_qs);
        (void)QTest::qWaitFor(
            [&] {
                return node.log().contains("node: waitlisted") || again.out().contains("\nready: ") ||
                       !node.running();
            },
            60'000);
        if (node.log().contains("node: waitlisted")) {
            QVERIFY2(node.log().contains("preparing this run's initial weights"),
                     node.log().right(3000).constData());
            QVERIFY2(node.running(), node.log().right(3000).constData());
        } else {
            QVERIFY2(node.running(), node.log().right(3000).constData());
            qWarning("the run was ready before the node asked to join: its wait was not seen");
        }
        node.kill();
    }
    QVERIFY2(again.waitReady(), QByteArray(again.out() + again.err()).constData());
    QVERIFY2(again.out().contains("ready: created the run of model 'small' in "), again.out().constData());
    qInfo("preparing the small preset: %s", qPrintable(again.printed("ready")));

    const QJsonObject status = get(again, u"/v1/status"_qs).json();
    QCOMPARE(status.value(u"state").toString(), QStringLiteral("serving"));
    QVERIFY(!status.contains(u"preparing"));
    QCOMPARE(status.value(u"stages").toArray().at(1).toObject().value(u"version").toInt(), 1);
    QCOMPARE(storedVersions(dir), 2);
    const HttpReply admitted = test::admitNode(m_net, m_ssl, again.url(), *id);
    QCOMPARE(admitted.status, 200);
    QVERIFY(!admitted.json().value(u"session_token").toString().isEmpty());
    QCOMPARE(get(again, u"/v1/shards/0/manifest"_qs).status, 200);
    // The upgrade is the session's now: without a token it gets no further than the WebSocket's own refusal.
    QVERIFY(!sessionUpgradeStatus(again).contains("503"));
}

void TestCoordinatorPreparation::aRestartListensFirstAndChecksItsCheckpointsMeanwhile() {
    const QString dir = m_dir.filePath(QStringLiteral("small")); // the run the test before created
    QCOMPARE(storedVersions(dir), 2);
    trust(dir);
    {
        // Stopped as soon as it listens (reading its checkpoints, or just done): a clean exit, no
        // version refused or added.
        CoordinatorProcess stopped(args(dir));
        QVERIFY2(stopped.waitListening(), stopped.err().constData());
        QCOMPARE(stopped.terminate(10'000), 0);
        QVERIFY2(stopped.out().contains("resumed the run of model 'small'"), stopped.out().constData());
        QCOMPARE(storedVersions(dir), 2);
    }
    {
        CoordinatorProcess restarted(args(dir));
        QVERIFY2(restarted.waitListening(), restarted.err().constData());
        // It answers while it reads: about 500 MB here (page-cached, a second or less), 32 GB at 8b.
        const QJsonObject status = get(restarted, u"/v1/status"_qs).json();
        const QString state = status.value(u"state").toString();
        if (state == u"preparing") {
            const QJsonObject progress = status.value(u"preparing").toObject();
            QCOMPARE(progress.value(u"phase").toString(), QStringLiteral("opening"));
            QVERIFY2(progress.value(u"bytes_to_read").toInteger() > qint64(400) << 20,
                     QJsonDocument(status).toJson().constData());
            QCOMPARE(get(restarted, u"/v1/shards/0/manifest"_qs).status, 503);
        } else {
            QCOMPARE(state, QStringLiteral("serving"));
            qWarning("the checkpoints were read before the first request: the opening was not seen");
        }
        QVERIFY2(restarted.waitReady(), QByteArray(restarted.out() + restarted.err()).constData());
        const QByteArray out = restarted.out();
        const qsizetype listening = out.indexOf("listening on ");
        const qsizetype checking = out.indexOf("preparing: checking every stage's checkpoint");
        const qsizetype ready = out.indexOf("ready: opened the run of model 'small' in ");
        QVERIFY2(listening >= 0 && listening < checking && checking < ready, out.constData());
        Result<Identity> id = Identity::generate();
        QVERIFY(id);
        QCOMPARE(test::admitNode(m_net, m_ssl, restarted.url(), *id).status, 200);
        QCOMPARE(get(restarted, u"/v1/shards/1/manifest"_qs).status, 200);
        QCOMPARE(restarted.terminate(10'000), 0);
    }
    QCOMPARE(storedVersions(dir), 2);

    // Stage 1's only version damaged while the coordinator was down: it listens, reads, then exits
    // saying which file and why.
    QFile shard(dir + u"/shards/stage-1-v1.safetensors"_qs);
    QVERIFY2(shard.open(QIODevice::ReadWrite), qPrintable(shard.fileName()));
    QVERIFY(shard.seek(shard.size() / 2));
    QVERIFY(shard.write(QByteArray(64, '\x5a')) == 64);
    shard.close();
    CoordinatorProcess damaged(args(dir));
    QCOMPARE(damaged.waitExit(), 1);
    QVERIFY2(damaged.out().contains("listening on "), damaged.out().constData());
    QVERIFY2(damaged.err().contains("stage 1 has no usable published version") &&
                 damaged.err().contains("stage-1-v1.safetensors") &&
                 damaged.err().contains("does not match the manifest"),
             damaged.err().constData());
    QVERIFY(!damaged.out().contains("\nready: "));
}

void TestCoordinatorPreparation::aWriterThatFillsTheDiskEndsTheStart() {
    test::SmallFilesystem fs;
    // Room for the key, the certificate and the database, not for 500 MB of shards.
    const Status mounted = fs.mount(qint64(48) << 20);
    QVERIFY2(mounted, mounted.message().c_str());
    const QString dir = fs.path() + QStringLiteral("/run");
    CoordinatorProcess full(args(dir, {QStringLiteral("--insecure-loopback"), QStringLiteral("--model"),
                                       QStringLiteral("small"), QStringLiteral("--stages"), u"2"_qs}));
    QCOMPARE(full.waitExit(), 1);
    QVERIFY2(full.err().contains("writing the run's initial shards") && full.err().contains("No space left"),
             full.err().constData());
    QVERIFY(!full.out().contains("\nready: "));
    QCOMPARE(storedVersions(dir), 0);
}

// The training data is checked on a thread of its own, beside the weights: a GiB of token ids (a
// sparse file: zeros that no disk holds) keeps a tiny run preparing for a second or more after its
// weights are written and read back. Meanwhile /v1/status says "checking_data" with the bytes
// checked of the file's size (in its percent too) and the shard route answers 503 naming the data; SIGTERM
// then ends it (exit 0, the weights recorded once). An id outside the vocabulary written as the file's last
// token while it was down: the restart listens, then exits 1 naming the file, the id and its position. The id
// put back, the restart serves without writing the weights again. Data that fails while a new run's weights
// are being written ends the start once they are recorded.
void TestCoordinatorPreparation::theTrainingDataIsCheckedBesideTheWeights() {
    const QString dir = m_dir.filePath(u"checked-data"_qs);
    const QString tokens = m_dir.filePath(u"tokens.u16"_qs);
    constexpr qint64 kBytes = qint64(1) << 30;
    {
        QFile f(tokens);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.resize(kBytes));
    }
    const auto lastToken = [&](const char bytes[2]) {
        QFile f(tokens);
        return f.open(QIODevice::ReadWrite) && f.seek(kBytes - 2) && f.write(bytes, 2) == 2;
    };
    const QStringList plain{u"--insecure-loopback"_qs};
    {
        CoordinatorProcess first(
            args(dir, plain + QStringList{u"--model"_qs, u"tiny"_qs, u"--stages"_qs, u"2"_qs, u"--dataset"_qs,
                                          u"tokens16:"_qs + tokens}));
        QVERIFY2(first.waitListening(), first.err().constData());
        QString state;
        QJsonObject progress;
        QVERIFY(QTest::qWaitFor(
            [&] {
                const QJsonObject status = get(first, u"/v1/status"_qs).json();
                state = status.value(u"state").toString();
                progress = status.value(u"preparing").toObject();
                return state != u"preparing" || progress.value(u"phase").toString() == u"checking_data";
            },
            30'000));
        if (state == u"preparing") {
            QVERIFY2(progress.value(u"data_bytes_checked").toInteger() < kBytes &&
                         progress.value(u"data_bytes_to_check").toInteger() == kBytes &&
                         progress.value(u"percent").toDouble() < 99.9,
                     QJsonDocument(progress).toJson().constData());
            const HttpReply refused = get(first, u"/v1/shards/0/manifest"_qs);
            QCOMPARE(refused.status, 503);
            QVERIFY2(refused.error().contains(u"checking this run's training data"),
                     refused.body.constData());
        } else {
            QCOMPARE(state, QStringLiteral("serving"));
            qWarning("the data was checked before a request saw it being checked");
        }
        QCOMPARE(first.terminate(10'000), 0);
    }
    QCOMPARE(storedVersions(dir), 2);

    QVERIFY(lastToken("\x2c\x01")); // 300, little-endian: beyond tiny's 256 byte values
    CoordinatorProcess bad(args(dir, plain));
    QCOMPARE(bad.waitExit(), 1);
    QVERIFY2(bad.out().contains("listening on ") && !bad.out().contains("\nready: "), bad.out().constData());
    QVERIFY2(bad.err().contains("the training data") && bad.err().contains(tokens.toUtf8()) &&
                 bad.err().contains("token 300 at position 536870911 is outside the vocabulary of 256"),
             bad.err().constData());

    QVERIFY(lastToken("\0\0"));
    CoordinatorProcess fixed(args(dir, plain));
    QVERIFY2(fixed.waitReady(), QByteArray(fixed.out() + fixed.err()).constData());
    QVERIFY2(fixed.out().contains("ready: opened the run of model 'tiny'"), fixed.out().constData());
    QCOMPARE(get(fixed, u"/v1/shards/1/manifest"_qs).status, 200);
    QCOMPARE(fixed.terminate(10'000), 0);
    QCOMPARE(storedVersions(dir), 2);

    // A new run whose data fails its check while its weights are being written (the small preset's
    // seconds of writing; an id beyond its 32,000 at once): the error is printed at once, the weights
    // are written and recorded to the end, then it exits 1, so that the next start only reads them.
    const QString smallDir = m_dir.filePath(u"bad-data-small"_qs);
    const QString badTokens = m_dir.filePath(u"bad.u16"_qs);
    {
        QFile f(badTokens);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write("\x01\x00\x02\x00\xff\xff", 6) == 6); // 1, 2, 65535
    }
    CoordinatorProcess writing(
        args(smallDir, plain + QStringList{u"--model"_qs, u"small"_qs, u"--stages"_qs, u"2"_qs,
                                           u"--dataset"_qs, u"tokens16:"_qs + badTokens}));
    QCOMPARE(writing.waitExit(), 1);
    const QByteArray err = writing.err();
    const qsizetype told = err.indexOf("token 65535 at position 2 is outside the vocabulary of 32000");
    const qsizetype recorded = err.indexOf("the initial shards are written and recorded");
    QVERIFY2(told >= 0 && recorded > told && err.contains(badTokens.toUtf8()), err.constData());
    QVERIFY(!writing.out().contains("\nready: "));
    QCOMPARE(storedVersions(smallDir), 2);
}

int main(int argc, char** argv) {
    test::SmallFilesystem::reexecUnsharedIfNeeded(argc, argv);
    QCoreApplication app(argc, argv);
    TestCoordinatorPreparation test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_coordinator_preparation.moc"
