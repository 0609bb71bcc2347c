// The real tessera-coordinator process given bad input and pushed to its limits: bad options,
// denied, waitlisted and unauthorized admissions, unknown shards, oversized bodies, impossible
// ranges, too many connections and trickling clients, after which it still serves and its
// database passes SQLite's integrity check.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "common/Identity.h"
#include "coordinator/admission/AdmissionClaims.h"

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUrl>

#include <memory>
#include <vector>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

using Reply = test::HttpReply;

constexpr qint64 kGiB = qint64(1) << 30;

Identity newIdentity() {
    Result<Identity> id = Identity::generate();
    if (!id)
        qFatal("Identity::generate: %s", id.message().c_str());
    return std::move(*id);
}

// The status code of an HTTP/1.1 response's status line, 0 when there is none.
int statusOf(const QByteArray& response) {
    if (!response.startsWith("HTTP/1.1 ") || response.size() < 12)
        return 0;
    return response.mid(9, 3).toInt();
}

// One request on a new plain-HTTP connection; the response as read until the server closed
// the connection. Waits with the event loop running, so timers in the test keep firing.
QByteArray rawExchange(quint16 port, const QByteArray& request, int timeoutMs = 5'000) {
    QTcpSocket socket;
    socket.connectToHost(QStringLiteral("127.0.0.1"), port);
    QByteArray response;
    QObject::connect(&socket, &QIODevice::readyRead, [&] { response += socket.readAll(); });
    if (!QTest::qWaitFor([&] { return socket.state() == QAbstractSocket::ConnectedState; }, timeoutMs))
        return {};
    socket.write(request);
    (void)QTest::qWaitFor([&] { return socket.state() == QAbstractSocket::UnconnectedState; }, timeoutMs);
    response += socket.readAll();
    return response;
}

QByteArray getStatusRequest() {
    return QByteArrayLiteral("GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

quint16 portOf(const CoordinatorProcess& p) {
    return quint16(QUrl(p.url()).port());
}

} // namespace

class TestCoordinatorLimits final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void badOptionsExitWith2();
    void nodeThatFitsNoStageIsDenied();
    void maxNodesWaitlistsWithRetryAfter();
    void maxNodesPerStageFillsEveryStageThenWaits();
    void nodesSpreadOverBothStages();
    void oldClientIsDenied();
    void badSignatureAndReplayAre401();
    void unknownStageAndVersionAre404();
    void oversizedBodyIs413();
    void rangePastTheEndIs416();
    void connectionLimitAnswers503();
    void tricklingClientIsCutOff();
    void stillServingAndDatabaseIntact();

private:
    Reply send(const QString& base, const QByteArray& method, const QString& path,
               const QByteArray& body = {}) {
        return test::httpRequest(m_net, m_ssl, base + path, method, body);
    }
    Reply get(const QString& path) { return send(m_server->url(), "GET", path); }
    // challenge → signed admission, claiming `memoryBytes` and `version`; the request body is
    // returned for replays and tampering.
    Reply admit(const QString& base, const Identity& id, qint64 memoryBytes = 8 * kGiB,
                const QString& version = QStringLiteral("0.1.0"), QJsonObject* request = nullptr) {
        return test::admitNode(m_net, m_ssl, base, id, request, test::testHardware(memoryBytes), version);
    }
    // A new run in its own folder under the test's temporary dir.
    std::unique_ptr<CoordinatorProcess> start(const QString& name, const QStringList& extra) const;
    QString curl(const QStringList& arguments);
    QJsonObject status(const QString& base) { return send(base, "GET", QStringLiteral("/v1/status")).json(); }

    QTemporaryDir m_dir;
    QString m_runDir;
    QString m_curl;
    std::unique_ptr<CoordinatorProcess> m_server; // --model tiny --stages 2, default limits
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
};

void TestCoordinatorLimits::initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo(coordinatorProgram()).isExecutable(), qPrintable(coordinatorProgram()));
    m_curl = QStandardPaths::findExecutable(QStringLiteral("curl"));
    m_runDir = m_dir.filePath(QStringLiteral("shared"));
    m_server = start(QStringLiteral("shared"), {});
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    QVERIFY(m_server->url().startsWith(u"https://127.0.0.1:"));
    const QList<QSslCertificate> certs =
        QSslCertificate::fromPath(m_runDir + QStringLiteral("/tls.crt"), QSsl::Pem);
    QCOMPARE(certs.size(), 1);
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(certs);
}

void TestCoordinatorLimits::cleanupTestCase() {
    m_server.reset();
}

std::unique_ptr<CoordinatorProcess> TestCoordinatorLimits::start(const QString& name,
                                                                 const QStringList& extra) const {
    return std::make_unique<CoordinatorProcess>(
        QStringList{QStringLiteral("--data-dir"), m_dir.filePath(name), QStringLiteral("--listen"),
                    QStringLiteral("127.0.0.1:0"), QStringLiteral("--model"), QStringLiteral("tiny"),
                    QStringLiteral("--stages"), QStringLiteral("2")} +
        extra);
}

QString TestCoordinatorLimits::curl(const QStringList& arguments) {
    QProcess p;
    p.start(m_curl, QStringList{QStringLiteral("-sS"), QStringLiteral("--cacert"),
                                m_runDir + QStringLiteral("/tls.crt")} +
                        arguments);
    if (!p.waitForFinished(30'000) || p.exitCode() != 0)
        qWarning("curl: %s", p.readAllStandardError().constData());
    return QString::fromUtf8(p.readAllStandardOutput());
}

// Tried: each new option with a value out of range or misspelt. Each is refused before anything
// is written, with exit code 2 and one line naming the option; --help lists them all.
void TestCoordinatorLimits::badOptionsExitWith2() {
    const QString dir = m_dir.filePath(QStringLiteral("never"));
    const std::vector<std::pair<QStringList, QByteArray>> cases = {
        {{QStringLiteral("--max-nodes"), QStringLiteral("-1")}, "--max-nodes must be a whole number"},
        {{QStringLiteral("--max-nodes"), QStringLiteral("many")}, "--max-nodes must be a whole number"},
        {{QStringLiteral("--max-nodes-per-stage"), QStringLiteral("1.5")},
         "--max-nodes-per-stage must be a whole number"},
        {{QStringLiteral("--waitlist-retry-after"), QStringLiteral("0")},
         "--waitlist-retry-after must be a whole number of seconds from 1"},
        {{QStringLiteral("--min-client-version"), QStringLiteral("1.2")},
         "--min-client-version 1.2: must be MAJOR.MINOR.PATCH"},
        {{QStringLiteral("--min-client-version"), QStringLiteral("01.0.0")},
         "--min-client-version 01.0.0: must be MAJOR.MINOR.PATCH"},
        {{QStringLiteral("--max-connections"), QStringLiteral("0")},
         "--max-connections must be a whole number"},
        {{QStringLiteral("--request-timeout-ms"), QStringLiteral("50")},
         "--request-timeout-ms must be a whole number from 100"},
    };
    // All at once: each start loads the whole program (seconds), the refusal itself is instant.
    std::vector<std::unique_ptr<CoordinatorProcess>> refused;
    for (const auto& c : cases)
        refused.push_back(
            std::make_unique<CoordinatorProcess>(QStringList{QStringLiteral("--data-dir"), dir} + c.first));
    CoordinatorProcess help({QStringLiteral("--help")});
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CoordinatorProcess& p = *refused[i];
        QCOMPARE(p.waitExit(), 2);
        QVERIFY2(p.err().contains(cases[i].second), p.err().constData());
        QCOMPARE(p.err().count('\n'), qsizetype(1));
    }
    QVERIFY(!QFileInfo::exists(dir));
    QCOMPARE(help.waitExit(), 0);
    for (const char* option : {"--max-nodes ", "--max-nodes-per-stage", "--waitlist-retry-after",
                               "--min-client-version", "--max-connections", "--request-timeout-ms"})
        QVERIFY2(help.out().contains(option), option);
}

// Tried: a model whose stages need ~4.4 GiB each (tiny's shape with an 8192-token context, so
// its shards stay small) and a node claiming 256 MiB, the least AdmissionClaims takes as sane.
// 403 saying what the smallest stage needs and what the node has; nothing is recorded. One byte
// less than 256 MiB is an implausible claim (400); an 8 GiB node fits.
void TestCoordinatorLimits::nodeThatFitsNoStageIsDenied() {
    const QString config = m_dir.filePath(QStringLiteral("tiny-long.json"));
    QFile f(config);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "tiny-long", "vocab_size": 256, "d_model": 128, "n_layers": 8, "n_heads": 4,
                "n_kv_heads": 2, "ffn_hidden": 384, "max_seq_len": 8192, "stages": 2})");
    f.close();
    CoordinatorProcess server({QStringLiteral("--data-dir"), m_dir.filePath(QStringLiteral("deny")),
                               QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                               QStringLiteral("--insecure-loopback"), QStringLiteral("--model"), config});
    QVERIFY2(server.waitReady(), server.err().constData());

    const Identity small = newIdentity();
    Reply r = admit(server.url(), small, kMinMemoryBytes);
    QVERIFY2(r.status == 403, r.body.constData());
    QVERIFY2(r.headers.value("content-type").startsWith("application/json"), r.body.constData());
    const QString why = r.error();
    QVERIFY2(why.startsWith(u"hardware.memory_bytes: needs ") &&
                 why.contains(u"for the smallest stage of model 'tiny-long'") &&
                 why.contains(u"this computer has 256.0 MiB"),
             qPrintable(why));
    QJsonObject s = status(server.url());
    QCOMPARE(s.value(u"nodes").toObject().value(u"total").toInt(-1), 0);
    QCOMPARE(s.value(u"nodes").toObject().value(u"online").toInt(-1), 0);

    r = admit(server.url(), newIdentity(), kMinMemoryBytes - 1);
    QCOMPARE(r.status, 400);
    QVERIFY2(r.error().startsWith(u"hardware.memory_bytes:"), qPrintable(r.error()));

    r = admit(server.url(), newIdentity(), 8 * kGiB);
    QVERIFY2(r.status == 200, r.body.constData());
    s = status(server.url());
    QCOMPARE(s.value(u"nodes").toObject().value(u"online").toInt(-1), 1);
}

// Tried: --max-nodes 1 --waitlist-retry-after 42. The first node is admitted; the second fits but
// is told 503 with retry_after 42 and Retry-After: 42; the first, admitted again, is not counted
// against itself.
void TestCoordinatorLimits::maxNodesWaitlistsWithRetryAfter() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("max-nodes"),
              {QStringLiteral("--insecure-loopback"), QStringLiteral("--max-nodes"), QStringLiteral("1"),
               QStringLiteral("--waitlist-retry-after"), QStringLiteral("42")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const Identity first = newIdentity();
    Reply r = admit(server->url(), first);
    QVERIFY2(r.status == 200, r.body.constData());
    QCOMPARE(r.json().value(u"stage").toInt(-1), 0);

    r = admit(server->url(), newIdentity());
    QVERIFY2(r.status == 503, r.body.constData());
    QCOMPARE(r.json().value(u"retry_after").toInt(), 42);
    QCOMPARE(r.headers.value("retry-after"), QByteArrayLiteral("42"));
    QVERIFY2(r.error().contains(u"the swarm is full (1 nodes)"), qPrintable(r.error()));

    r = admit(server->url(), first);
    QVERIFY2(r.status == 200, r.body.constData());
    QCOMPARE(status(server->url()).value(u"nodes").toObject().value(u"online").toInt(-1), 1);
}

// Tried: --max-nodes-per-stage 1 on two stages. Two nodes land on different stages; the third
// fits either but both are full: 503 with the default retry_after of 300 s.
void TestCoordinatorLimits::maxNodesPerStageFillsEveryStageThenWaits() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("per-stage"), {QStringLiteral("--insecure-loopback"),
                                            QStringLiteral("--max-nodes-per-stage"), QStringLiteral("1")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const Reply a = admit(server->url(), newIdentity());
    const Reply b = admit(server->url(), newIdentity());
    QVERIFY2(a.status == 200, a.body.constData());
    QVERIFY2(b.status == 200, b.body.constData());
    QCOMPARE(a.json().value(u"stage").toInt(-1) + b.json().value(u"stage").toInt(-1), 1); // 0 and 1

    const Reply c = admit(server->url(), newIdentity());
    QVERIFY2(c.status == 503, c.body.constData());
    QCOMPARE(c.json().value(u"retry_after").toInt(), 300);
    QCOMPARE(c.headers.value("retry-after"), QByteArrayLiteral("300"));
    QVERIFY2(c.error().contains(u"every stage this node fits is full (1 nodes each)"), qPrintable(c.error()));
    const QJsonArray stages = status(server->url()).value(u"stages").toArray();
    QCOMPARE(stages.size(), 2);
    for (const QJsonValue& stage : stages)
        QCOMPARE(stage.toObject().value(u"nodes_online").toInt(-1), 1);
}

// Tried: six equal nodes admitted on the shared run, no limits. Both stages get nodes, and
// /v1/status's per-stage counts match the stages the admissions answered.
void TestCoordinatorLimits::nodesSpreadOverBothStages() {
    const QJsonArray before = status(m_server->url()).value(u"stages").toArray();
    QCOMPARE(before.size(), 2);
    int admitted[2] = {0, 0};
    for (int i = 0; i < 6; ++i) {
        const Reply r = admit(m_server->url(), newIdentity());
        QVERIFY2(r.status == 200, r.body.constData());
        const int stage = r.json().value(u"stage").toInt(-1);
        QVERIFY(stage == 0 || stage == 1);
        ++admitted[stage];
    }
    QVERIFY2(admitted[0] >= 2 && admitted[1] >= 2,
             qPrintable(QStringLiteral("stage 0: %1, stage 1: %2").arg(admitted[0]).arg(admitted[1])));
    const QJsonArray after = status(m_server->url()).value(u"stages").toArray();
    QCOMPARE(after.size(), 2);
    for (int s = 0; s < 2; ++s)
        QCOMPARE(after.at(s).toObject().value(u"nodes_online").toInt() -
                     before.at(s).toObject().value(u"nodes_online").toInt(),
                 admitted[s]);
}

// Tried: --min-client-version 0.2.0 and a node claiming 0.1.0: 403 (AdmissionService answers an
// old client with Denied, not 426) naming both versions; /v1/info advertises the minimum, and
// 0.2.0 is admitted.
void TestCoordinatorLimits::oldClientIsDenied() {
    std::unique_ptr<CoordinatorProcess> server = start(
        QStringLiteral("min-version"), {QStringLiteral("--insecure-loopback"),
                                        QStringLiteral("--min-client-version"), QStringLiteral("0.2.0")});
    QVERIFY2(server->waitReady(), server->err().constData());
    QCOMPARE(
        send(server->url(), "GET", QStringLiteral("/v1/info")).json().value(u"min_client_version").toString(),
        QStringLiteral("0.2.0"));
    Reply r = admit(server->url(), newIdentity(), 8 * kGiB, QStringLiteral("0.1.0"));
    QVERIFY2(r.status == 403, r.body.constData());
    QVERIFY2(r.error().startsWith(u"client_version: 0.1.0") && r.error().contains(u"(0.2.0)"),
             qPrintable(r.error()));
    r = admit(server->url(), newIdentity(), 8 * kGiB, QStringLiteral("0.2.0"));
    QVERIFY2(r.status == 200, r.body.constData());
}

// Tried: a signed admission with one character of its signature changed (401, and the nonce is
// left unspent, so the genuine request still succeeds), then that genuine request replayed
// (401: the nonce is spent).
void TestCoordinatorLimits::badSignatureAndReplayAre401() {
    const Identity id = newIdentity();
    const Reply challenge =
        send(m_server->url(), "POST", QStringLiteral("/v1/admission/challenge"),
             QJsonDocument(QJsonObject{{QStringLiteral("node_key"), id.publicKeyBase64()}}).toJson());
    QCOMPARE(challenge.status, 200);
    const QJsonObject genuine =
        makeAdmissionRequest(id, challenge.json().value(u"nonce").toString(), test::testHardware(),
                             test::testBench(), QStringLiteral("0.1.0"));
    QJsonObject forged = genuine;
    QString signature = genuine.value(u"signature").toString();
    QVERIFY(!signature.isEmpty());
    signature[0] = signature[0] == u'A' ? u'B' : u'A'; // the first character: all six bits count
    forged.insert(QStringLiteral("signature"), signature);

    Reply r = send(m_server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(forged).toJson());
    QVERIFY2(r.status == 401, r.body.constData());
    QVERIFY2(r.error().startsWith(u"signature:"), qPrintable(r.error()));

    r = send(m_server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(genuine).toJson());
    QVERIFY2(r.status == 200, r.body.constData());
    r = send(m_server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(genuine).toJson());
    QVERIFY2(r.status == 401, r.body.constData());
    QVERIFY2(r.error().startsWith(u"nonce:"), qPrintable(r.error()));
}

// Tried: the manifest of stage 9 of a two-stage run, and a file of version 99 of stage 0.
void TestCoordinatorLimits::unknownStageAndVersionAre404() {
    Reply r = get(QStringLiteral("/v1/shards/9/manifest"));
    QCOMPARE(r.status, 404);
    QVERIFY2(!r.error().isEmpty(), r.body.constData());
    r = get(QStringLiteral("/v1/shards/0/99/stage-0-v99.safetensors"));
    QCOMPARE(r.status, 404);
    QVERIFY2(!r.error().isEmpty(), r.body.constData());
    QCOMPARE(get(QStringLiteral("/v1/shards/0/manifest")).status, 200);
}

// Tried: curl posting 2 MiB to /v1/admission/challenge (the cap is 1 MiB). With curl's
// Expect: 100-continue the 413 comes before any of the body is sent; without it, curl sends
// the body into a response already given. The server answers normally afterwards.
void TestCoordinatorLimits::oversizedBodyIs413() {
    if (m_curl.isEmpty())
        QSKIP("the curl binary is not installed");
    const QString big = m_dir.filePath(QStringLiteral("big.json"));
    QFile f(big);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(2 * 1024 * 1024, ' '));
    f.close();
    const QString url = m_server->url() + QStringLiteral("/v1/admission/challenge");
    const QStringList post{QStringLiteral("-o"),
                           QStringLiteral("/dev/null"),
                           QStringLiteral("-H"),
                           QStringLiteral("Content-Type: application/json"),
                           QStringLiteral("--data-binary"),
                           u'@' + big};
    // %{size_upload}: body bytes curl sent.
    QCOMPARE(
        curl(post + QStringList{QStringLiteral("-w"), QStringLiteral("%{http_code} %{size_upload}"), url}),
        QStringLiteral("413 0"));
    const QString noExpect =
        curl(post + QStringList{QStringLiteral("-H"), QStringLiteral("Expect:"), QStringLiteral("-w"),
                                QStringLiteral("%{http_code}"), url});
    QCOMPARE(noExpect, QStringLiteral("413"));
    QCOMPARE(get(QStringLiteral("/v1/status")).status, 200);
}

// Tried: curl -r 999999999- on stage 0's shard, far past its end: 416 with Content-Range
// bytes */SIZE, SIZE the file's size on disk.
void TestCoordinatorLimits::rangePastTheEndIs416() {
    if (m_curl.isEmpty())
        QSKIP("the curl binary is not installed");
    const qint64 size = QFileInfo(m_runDir + QStringLiteral("/shards/stage-0-v1.safetensors")).size();
    QVERIFY(size > 0 && size < 999'999'999);
    const QString headers = m_dir.filePath(QStringLiteral("416-headers.txt"));
    const QString code = curl({QStringLiteral("-r"), QStringLiteral("999999999-"), QStringLiteral("-D"),
                               headers, QStringLiteral("-o"), QStringLiteral("/dev/null"),
                               QStringLiteral("-w"), QStringLiteral("%{http_code}"),
                               m_server->url() + QStringLiteral("/v1/shards/0/1/stage-0-v1.safetensors")});
    QCOMPARE(code, QStringLiteral("416"));
    QFile h(headers);
    QVERIFY(h.open(QIODevice::ReadOnly));
    const QByteArray head = h.readAll();
    QVERIFY2(head.contains(QByteArray("\r\nContent-Range: bytes */" + QByteArray::number(size) + "\r\n")),
             head.constData());
}

// Tried: --max-connections 4 over plain HTTP. Four idle connections are held open; a fifth is
// answered 503 with Retry-After and closed; a held one is still served; once the four are
// closed, new requests succeed again.
void TestCoordinatorLimits::connectionLimitAnswers503() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("connections"), {QStringLiteral("--insecure-loopback"),
                                              QStringLiteral("--max-connections"), QStringLiteral("4")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const quint16 port = portOf(*server);

    std::vector<std::unique_ptr<QTcpSocket>> held;
    for (int i = 0; i < 4; ++i) {
        held.push_back(std::make_unique<QTcpSocket>());
        held.back()->connectToHost(QStringLiteral("127.0.0.1"), port);
        QVERIFY(held.back()->waitForConnected(5'000));
    }
    QTest::qWait(200); // the server takes them in

    QElapsedTimer clock;
    clock.start();
    const QByteArray refused = rawExchange(port, getStatusRequest());
    QVERIFY2(statusOf(refused) == 503, refused.constData());
    QVERIFY2(refused.contains("\r\nRetry-After: 1\r\n"), refused.constData());
    QVERIFY2(refused.contains("\r\nConnection: close\r\n"), refused.constData());
    QVERIFY2(clock.elapsed() < 3'000, "the refused connection was not closed promptly");

    // A held connection is one of the four being served.
    QTcpSocket& first = *held.front();
    QByteArray answer;
    first.write(getStatusRequest());
    QVERIFY(QTest::qWaitFor(
        [&] {
            answer += first.readAll();
            return first.state() == QAbstractSocket::UnconnectedState;
        },
        5'000));
    answer += first.readAll();
    QVERIFY2(statusOf(answer) == 200, answer.constData());

    for (auto& socket : held)
        socket->disconnectFromHost();
    held.clear();
    // The server notices the closes on its own loop: a request may race them, so retry briefly.
    QByteArray again;
    QVERIFY(QTest::qWaitFor(
        [&] {
            again = rawExchange(port, getStatusRequest());
            return statusOf(again) == 200;
        },
        5'000));
    // And all four slots are free again (retried for the same race).
    const auto fourAtOnce = [port] {
        std::vector<std::unique_ptr<QTcpSocket>> sockets;
        for (int i = 0; i < 4; ++i) {
            sockets.push_back(std::make_unique<QTcpSocket>());
            sockets.back()->connectToHost(QStringLiteral("127.0.0.1"), port);
            if (!sockets.back()->waitForConnected(5'000))
                return false;
        }
        for (auto& socket : sockets)
            socket->write(getStatusRequest());
        for (auto& socket : sockets) {
            QByteArray r;
            (void)QTest::qWaitFor(
                [&] {
                    r += socket->readAll();
                    return socket->state() == QAbstractSocket::UnconnectedState;
                },
                5'000);
            r += socket->readAll();
            if (statusOf(r) != 200)
                return false;
        }
        return true;
    };
    QVERIFY(QTest::qWaitFor(fourAtOnce, 10'000));
}

// Tried: --request-timeout-ms 1000 over plain HTTP. One client trickles a header block a byte
// every 200 ms, another sends its header and then trickles a 64-byte body the same way; each is
// answered 408 and closed about a second in, while a normal request on a third connection is
// served meanwhile.
void TestCoordinatorLimits::tricklingClientIsCutOff() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("slow"), {QStringLiteral("--insecure-loopback"),
                                       QStringLiteral("--request-timeout-ms"), QStringLiteral("1000")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const quint16 port = portOf(*server);

    struct Trickle {
        QTcpSocket socket;
        QByteArray toSend;
        QByteArray received;
        qint64 closedAtMs = -1;
    };
    Trickle head;
    head.toSend = QByteArrayLiteral("GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") +
                  QByteArray(200, 'a') + "\r\n\r\n";
    Trickle body;
    const QByteArray bodyHead =
        QByteArrayLiteral("POST /v1/admission/challenge HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Content-Type: application/json\r\nContent-Length: 64\r\n\r\n");
    body.toSend = QByteArray(64, ' ');

    QElapsedTimer clock;
    for (Trickle* t : {&head, &body}) {
        t->socket.connectToHost(QStringLiteral("127.0.0.1"), port);
        QVERIFY(t->socket.waitForConnected(5'000));
        QObject::connect(&t->socket, &QIODevice::readyRead, [t] { t->received += t->socket.readAll(); });
        QObject::connect(&t->socket, &QAbstractSocket::disconnected,
                         [t, &clock] { t->closedAtMs = clock.elapsed(); });
    }
    clock.start();
    body.socket.write(bodyHead);
    QTimer drip;
    drip.setInterval(200);
    QObject::connect(&drip, &QTimer::timeout, [&] {
        for (Trickle* t : {&head, &body})
            if (t->closedAtMs < 0 && !t->toSend.isEmpty()) {
                t->socket.write(t->toSend.left(1));
                t->toSend.remove(0, 1);
            }
    });
    drip.start();

    QTest::qWait(200);
    const QByteArray normal = rawExchange(port, getStatusRequest());
    QVERIFY2(statusOf(normal) == 200, normal.constData());
    QVERIFY2(head.closedAtMs < 0 && body.closedAtMs < 0, "a trickling client was cut off too early");

    QVERIFY(QTest::qWaitFor([&] { return head.closedAtMs >= 0 && body.closedAtMs >= 0; }, 5'000));
    drip.stop();
    for (Trickle* t : {&head, &body}) {
        t->received += t->socket.readAll();
        QVERIFY2(statusOf(t->received) == 408, t->received.constData());
        QVERIFY2(t->closedAtMs >= 900 && t->closedAtMs <= 3'000,
                 qPrintable(QStringLiteral("closed after %1 ms").arg(t->closedAtMs)));
        QVERIFY(!t->toSend.isEmpty()); // it was cut off, not finished
    }
    QVERIFY(statusOf(rawExchange(port, getStatusRequest())) == 200);
}

// Tried: after everything above, the shared process still answers /v1/status, and its live
// SQLite database (opened read-only next to it) passes PRAGMA integrity_check.
void TestCoordinatorLimits::stillServingAndDatabaseIntact() {
    const Reply r = get(QStringLiteral("/v1/status"));
    QCOMPARE(r.status, 200);
    // Nodes stay online only while heard from (30 s), so count every node ever admitted.
    QVERIFY(r.json().value(u"nodes").toObject().value(u"total").toInt() >= 7);

    const QString path = m_runDir + QStringLiteral("/coordinator.sqlite");
    QVERIFY(QFileInfo::exists(path));
    const QString connection = QStringLiteral("limits-integrity");
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
        db.setDatabaseName(path);
        db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY"));
        QVERIFY2(db.open(), qPrintable(db.lastError().text()));
        QSqlQuery q(db);
        QVERIFY2(q.exec(QStringLiteral("PRAGMA integrity_check")), qPrintable(q.lastError().text()));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toString(), QStringLiteral("ok"));
        QVERIFY(!q.next());
        db.close();
    }
    QSqlDatabase::removeDatabase(connection);
    QCOMPARE(get(QStringLiteral("/v1/info")).status, 200);
}

QTEST_GUILESS_MAIN(TestCoordinatorLimits)
#include "test_coordinator_limits.moc"
