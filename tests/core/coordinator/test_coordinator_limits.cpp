// SPDX-License-Identifier: Apache-2.0
// The real tessera-coordinator process given bad input and pushed to its HTTP limits: bad options,
// unknown shards, oversized bodies, impossible ranges, too many connections and trickling clients.
#include "CoordinatorLimitsFixture.h"

#include <QWebSocket>

using namespace tessera;
using namespace tessera::test;

class TestCoordinatorLimits final : public CoordinatorLimitsFixture {
    Q_OBJECT

private Q_SLOTS:
    void badOptionsExitWith2();
    void unknownStageAndVersionAre404();
    void oversizedBodyIs413();
    void rangePastTheEndIs416();
    void connectionLimitAnswers503();
    void tricklingClientIsCutOff();
    void oneAddressCannotTakeEveryConnection();
    void admissionRequestsPerAddressAreLimited();
    void bodiesInFlightShareOneBudget();
    void upgradedSessionsStillCountAsConnections();
    void oversizeBinaryRefusedAsItArrives();
};

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
        {{QStringLiteral("--max-connections-per-address"), QStringLiteral("-1")},
         "--max-connections-per-address must be a whole number from 0"},
        {{QStringLiteral("--max-admissions-per-address"), QStringLiteral("x")},
         "--max-admissions-per-address must be a whole number from 0"},
        {{QStringLiteral("--max-inflight-mib"), QStringLiteral("2000000")},
         "--max-inflight-mib must be a whole number from 0 to 1048576"},
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
    for (const char* option :
         {"--max-nodes ", "--max-nodes-per-stage", "--waitlist-retry-after", "--min-client-version",
          "--max-connections", "--request-timeout-ms", "--max-connections-per-address",
          "--max-admissions-per-address", "--max-inflight-mib"})
        QVERIFY2(help.out().contains(option), option);
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

// Tried: --max-connections-per-address 4 over plain HTTP. Another host (127.0.0.2 on loopback)
// opens 4 connections and sends nothing; its 5th is closed at once with no answer, while this host
// (127.0.0.1) is still served and an honest node is still admitted. Once the other host closes its
// 4, it is served again.
void TestCoordinatorLimits::oneAddressCannotTakeEveryConnection() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("per-address"),
              {QStringLiteral("--insecure-loopback"), QStringLiteral("--max-connections-per-address"),
               QStringLiteral("4")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const quint16 port = portOf(*server);
    const QHostAddress other(QStringLiteral("127.0.0.2"));

    std::vector<std::unique_ptr<QTcpSocket>> held;
    for (int i = 0; i < 4; ++i) {
        held.push_back(connectFrom(other, port));
        QVERIFY(held.back());
    }
    QTest::qWait(200); // the server takes them in
    const QByteArray refused = rawExchangeFrom(other, port, getStatusRequest());
    QVERIFY2(refused.isEmpty(), refused.constData()); // closed unanswered, not left waiting

    const QByteArray served = rawExchange(port, getStatusRequest());
    QVERIFY2(statusOf(served) == 200, served.constData());
    const Reply admitted = admit(server->url(), newIdentity());
    QVERIFY2(admitted.status == 200, admitted.body.constData());
    // The held ones are still being served themselves.
    for (auto& socket : held)
        QCOMPARE(socket->state(), QAbstractSocket::ConnectedState);

    held.clear();
    QByteArray again;
    QVERIFY(QTest::qWaitFor(
        [&] {
            again = rawExchangeFrom(other, port, getStatusRequest());
            return statusOf(again) == 200;
        },
        5'000));
}

// Tried: --max-admissions-per-address 3. Four challenges from this host in a row: the fourth gets
// 429 with a Retry-After and words; another host (127.0.0.2) still gets its challenge.
void TestCoordinatorLimits::admissionRequestsPerAddressAreLimited() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("admission-rate"),
              {QStringLiteral("--insecure-loopback"), QStringLiteral("--max-admissions-per-address"),
               QStringLiteral("3")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const quint16 port = portOf(*server);
    const QByteArray body =
        QJsonDocument(QJsonObject{{QStringLiteral("node_key"), newIdentity().publicKeyBase64()}}).toJson();
    const QByteArray request =
        "POST /v1/admission/challenge HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nContent-Length: " +
        QByteArray::number(body.size()) + "\r\n\r\n" + body;
    for (int i = 0; i < 3; ++i) {
        const QByteArray r = rawExchange(port, request);
        QVERIFY2(statusOf(r) == 200, r.constData());
    }
    const QByteArray limited = rawExchange(port, request);
    QVERIFY2(statusOf(limited) == 429, limited.constData());
    QVERIFY2(limited.contains("\r\nRetry-After: "), limited.constData());
    QVERIFY2(limited.contains("admission requests a minute from your address"), limited.constData());
    const QByteArray elsewhere = rawExchangeFrom(QHostAddress(QStringLiteral("127.0.0.2")), port, request);
    QVERIFY2(statusOf(elsewhere) == 200, elsewhere.constData());
}

// Tried: --max-inflight-mib 1. One client announces a 900 KiB body and sends half of it; a second
// client announcing another 900 KiB body is answered 503 at once (the two would hold 1.8 MiB), with
// words; once the first finishes, the second's request is read and answered (400: it is no JSON).
void TestCoordinatorLimits::bodiesInFlightShareOneBudget() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("in-flight"), {QStringLiteral("--insecure-loopback"),
                                            QStringLiteral("--max-inflight-mib"), QStringLiteral("1")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const quint16 port = portOf(*server);
    constexpr int kBody = 900 * 1024;
    const QByteArray head =
        "POST /v1/admission/challenge HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nContent-Length: " +
        QByteArray::number(kBody) + "\r\n\r\n";
    QTcpSocket first;
    first.connectToHost(QStringLiteral("127.0.0.1"), port);
    QVERIFY(first.waitForConnected(5'000));
    first.write(head + QByteArray(kBody / 2, ' '));
    QTest::qWait(300);

    const QByteArray refused = rawExchange(port, head + QByteArray(kBody, ' '));
    QVERIFY2(statusOf(refused) == 503, refused.left(300).constData());
    QVERIFY2(refused.contains("receiving as much as it can hold"), refused.left(300).constData());

    QByteArray answer;
    first.write(QByteArray(kBody / 2, ' '));
    QVERIFY(QTest::qWaitFor(
        [&] {
            answer += first.readAll();
            return first.state() == QAbstractSocket::UnconnectedState;
        },
        5'000));
    answer += first.readAll();
    QVERIFY2(statusOf(answer) == 400, answer.constData());
    const QByteArray after = rawExchange(port, head + QByteArray(kBody, ' '));
    QVERIFY2(statusOf(after) == 400, after.left(300).constData());
}

// Tried: --max-connections 3 and three nodes holding their sessions (ws://). A fourth connection
// is told 503: the upgraded sockets still count. One node closes its session, and the next request
// is served.
void TestCoordinatorLimits::upgradedSessionsStillCountAsConnections() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("sessions-count"), {QStringLiteral("--insecure-loopback"),
                                                 QStringLiteral("--max-connections"), QStringLiteral("3")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const quint16 port = portOf(*server);
    QStringList tokens;
    for (int i = 0; i < 3; ++i) {
        const Reply r = admit(server->url(), newIdentity());
        QVERIFY2(r.status == 200, r.body.constData());
        tokens << r.json().value(u"session_token").toString();
    }
    m_net.clearConnectionCache(); // the admissions' keep-alive connections would count too
    QTest::qWait(300);
    std::vector<std::unique_ptr<QWebSocket>> sessions;
    for (const QString& token : tokens) {
        sessions.push_back(std::make_unique<QWebSocket>());
        QNetworkRequest request(QUrl(QStringLiteral("ws://127.0.0.1:%1/v1/session").arg(port)));
        request.setRawHeader("Authorization", "Bearer " + token.toLatin1());
        sessions.back()->open(request);
        QVERIFY(QTest::qWaitFor([&] { return sessions.back()->state() == QAbstractSocket::ConnectedState; },
                                10'000));
    }
    QTest::qWait(300);
    for (auto& s : sessions)
        QCOMPARE(s->state(), QAbstractSocket::ConnectedState);
    const QByteArray refused = rawExchange(port, getStatusRequest());
    QVERIFY2(statusOf(refused) == 503, refused.constData());

    sessions.front()->close();
    QByteArray served;
    QVERIFY(QTest::qWaitFor(
        [&] {
            served = rawExchange(port, getStatusRequest());
            return statusOf(served) == 200;
        },
        5'000));
}

namespace {

// A process's peak resident memory so far (VmHWM), in bytes; 0 when it cannot be read.
qint64 peakRss(qint64 pid) {
    QFile status(QStringLiteral("/proc/%1/status").arg(pid));
    if (!status.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray& line : status.readAll().split('\n'))
        if (line.startsWith("VmHWM:"))
            return line.mid(6).trimmed().split(' ').first().toLongLong() * 1024;
    return 0;
}

} // namespace

// Tried: a node sends one 96 MiB binary message (a "result" far larger than any this tiny run's
// tasks make: the largest legitimate one is a stage's weights, about 2 MiB). The socket is closed
// with 1009 naming the limit before the message is through, and the coordinator's peak memory does
// not grow by the message's size.
void TestCoordinatorLimits::oversizeBinaryRefusedAsItArrives() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("oversize-binary"), {QStringLiteral("--insecure-loopback")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const Reply r = admit(server->url(), newIdentity());
    QVERIFY2(r.status == 200, r.body.constData());
    QWebSocket node;
    QNetworkRequest request(QUrl(QStringLiteral("ws://127.0.0.1:%1/v1/session").arg(portOf(*server))));
    request.setRawHeader("Authorization", "Bearer " + r.json().value(u"session_token").toString().toLatin1());
    node.open(request);
    QVERIFY(QTest::qWaitFor([&] { return node.state() == QAbstractSocket::ConnectedState; }, 10'000));
    const qint64 before = peakRss(server->pid());
    QVERIFY(before > 0);
    constexpr qint64 kMessage = qint64(96) << 20;
    node.sendBinaryMessage(QByteArray(kMessage, '\x5a'));
    QVERIFY(QTest::qWaitFor([&] { return node.state() == QAbstractSocket::UnconnectedState; }, 30'000));
    QCOMPARE(node.closeCode(), QWebSocketProtocol::CloseCodeTooMuchData);
    QVERIFY2(node.closeReason().contains(u"binary messages are limited"), qPrintable(node.closeReason()));
    const qint64 grown = peakRss(server->pid()) - before;
    QVERIFY2(grown < kMessage / 3, qPrintable(QStringLiteral("peak RSS grew by %1 MiB").arg(grown >> 20)));
    QCOMPARE(rawExchange(portOf(*server), getStatusRequest()).left(12), QByteArray("HTTP/1.1 200"));
}

QTEST_GUILESS_MAIN(TestCoordinatorLimits)
#include "test_coordinator_limits.moc"
