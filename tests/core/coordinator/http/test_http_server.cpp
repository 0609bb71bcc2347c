// SPDX-License-Identifier: Apache-2.0
// HttpServer: routes, limits and timeouts seen through real sockets on loopback, and the
// hand-over of a WebSocket upgrade to QWebSocketServer.
#include "common/TlsCertificate.h"
#include "coordinator/http/HttpServer.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSslSocket>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QWebSocket>
#include <QWebSocketServer>

#include <optional>
#include <stdexcept>

using namespace tessera;
using namespace tessera::coordinator::http;

namespace {

struct Response {
    int status = 0;
    HttpHeaders headers;
    QByteArray body;
};

// A raw HTTP client: sends exact bytes, parses responses by Content-Length.
class RawClient final {
public:
    explicit RawClient(quint16 port) {
        QObject::connect(&m_socket, &QIODevice::readyRead, [this] { m_buffer += m_socket.readAll(); });
        m_socket.connectToHost(QHostAddress::LocalHost, port);
    }
    bool waitConnected() {
        return QTest::qWaitFor([this] { return m_socket.state() == QAbstractSocket::ConnectedState; }, 5000);
    }
    void send(const QByteArray& bytes) { m_socket.write(bytes); }
    bool waitClosed(int ms = 5000) {
        return QTest::qWaitFor([this] { return m_socket.state() == QAbstractSocket::UnconnectedState; }, ms);
    }
    bool isOpen() const { return m_socket.state() == QAbstractSocket::ConnectedState; }

    // The next whole response; `headOnly` for an answer to HEAD, which has no body.
    std::optional<Response> next(bool headOnly = false, int ms = 5000) {
        std::optional<Response> out;
        if (!QTest::qWaitFor([&] { return (out = parse(headOnly)).has_value(); }, ms))
            return std::nullopt;
        return out;
    }

private:
    std::optional<Response> parse(bool headOnly) {
        const qsizetype end = m_buffer.indexOf("\r\n\r\n");
        if (end < 0)
            return std::nullopt;
        QByteArrayList lines = m_buffer.left(end).split('\n');
        Response r;
        r.status = lines.first().split(' ').value(1).toInt();
        for (qsizetype i = 1; i < lines.size(); ++i) {
            const QByteArray line = lines[i].trimmed();
            const qsizetype colon = line.indexOf(':');
            r.headers.add(line.left(colon), line.mid(colon + 1).trimmed());
        }
        const qint64 length = headOnly ? 0 : r.headers.value("Content-Length").toLongLong();
        if (m_buffer.size() < end + 4 + length)
            return std::nullopt;
        r.body = m_buffer.mid(end + 4, length);
        m_buffer.remove(0, end + 4 + length);
        return r;
    }

    QTcpSocket m_socket;
    QByteArray m_buffer;
};

QByteArray get(const QByteArray& path) {
    return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

QJsonObject jsonOf(const Response& r) {
    return QJsonDocument::fromJson(r.body).object();
}

// A QWebSocketServer that is handed sockets and echoes text messages.
class EchoWebSockets final {
public:
    EchoWebSockets()
        : m_server(QStringLiteral("test"), QWebSocketServer::NonSecureMode) {
        QObject::connect(&m_server, &QWebSocketServer::newConnection, &m_server, [this] {
            while (QWebSocket* peer = m_server.nextPendingConnection()) {
                QObject::connect(peer, &QWebSocket::textMessageReceived, peer, [peer](const QString& m) {
                    peer->sendTextMessage(QStringLiteral("echo: ") + m);
                });
                QObject::connect(peer, &QWebSocket::disconnected, peer, &QObject::deleteLater);
            }
        });
    }
    HttpServer::UpgradeHandler handler() {
        return [this](QTcpSocket* socket) { m_server.handleConnection(socket); };
    }

private:
    QWebSocketServer m_server;
};

// Opens `client` on `url`, says hi and returns what came back.
QStringList hello(QWebSocket& client, const QUrl& url) {
    QStringList received;
    QObject::connect(&client, &QWebSocket::textMessageReceived, &client,
                     [&received](const QString& m) { received << m; });
    client.open(url);
    if (!QTest::qWaitFor([&] { return client.state() == QAbstractSocket::ConnectedState; }, 5000))
        return {};
    client.sendTextMessage(QStringLiteral("hi"));
    if (!QTest::qWaitFor([&] { return !received.isEmpty(); }, 5000))
        return {};
    return received;
}

} // namespace

class TestHttpServer : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<HttpServer> m_server;
    int m_echoCalls = 0;

    quint16 start(HttpServerConfig config = {}) {
        m_server = std::make_unique<HttpServer>(config);
        m_echoCalls = 0;
        m_server->route("GET", QStringLiteral("/v1/info"), [](const HttpRequest&) {
            return HttpResponse::json(
                200, QJsonDocument(QJsonObject{{QStringLiteral("name"), QStringLiteral("t")}}));
        });
        m_server->route("GET", QStringLiteral("/v1/shards/{stage}/{version}/{file}"),
                        [](const HttpRequest& r) {
                            return HttpResponse::json(
                                200, QJsonDocument(QJsonObject{
                                         {QStringLiteral("stage"), r.param(QStringLiteral("stage"))},
                                         {QStringLiteral("version"), r.param(QStringLiteral("version"))},
                                         {QStringLiteral("file"), r.param(QStringLiteral("file"))},
                                         {QStringLiteral("q"), r.query.queryItemValue(QStringLiteral("q"))},
                                     }));
                        });
        m_server->route("POST", QStringLiteral("/v1/echo"), [this](const HttpRequest& r) {
            ++m_echoCalls;
            return HttpResponse(200, r.body, "application/octet-stream");
        });
        m_server->route("GET", QStringLiteral("/v1/throw"),
                        [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
        const Status s = m_server->listen(QHostAddress::LocalHost);
        if (!s)
            qFatal("listen: %s", s.message().c_str());
        return m_server->port();
    }

private Q_SLOTS:
    void jsonRouteWithParams() {
        RawClient c(start());
        c.send(get("/v1/info"));
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->headers.value("Content-Type"), QByteArrayLiteral("application/json"));
        QVERIFY(r->headers.value("Date").endsWith(" GMT"));
        QCOMPARE(jsonOf(*r).value(QStringLiteral("name")).toString(), QStringLiteral("t"));

        c.send(get("/v1/shards/2/17/model%20a.safetensors?q=x%26y"));
        r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const QJsonObject o = jsonOf(*r);
        QCOMPARE(o.value(QStringLiteral("stage")).toString(), QStringLiteral("2"));
        QCOMPARE(o.value(QStringLiteral("version")).toString(), QStringLiteral("17"));
        QCOMPARE(o.value(QStringLiteral("file")).toString(), QStringLiteral("model a.safetensors"));
        QCOMPARE(o.value(QStringLiteral("q")).toString(), QStringLiteral("x&y"));
    }

    void notFoundAndWrongMethod() {
        RawClient c(start());
        c.send(get("/v1/nothing"));
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 404);
        QVERIFY(!jsonOf(*r).value(QStringLiteral("error")).toString().isEmpty());

        c.send("DELETE /v1/info HTTP/1.1\r\nHost: x\r\n\r\n");
        r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 405);
        QCOMPARE(r->headers.value("Allow"), QByteArrayLiteral("GET, HEAD"));
        QVERIFY(c.isOpen()); // a routing error is no reason to drop the connection
    }

    void headHasLengthButNoBody() {
        RawClient c(start());
        c.send("HEAD /v1/info HTTP/1.1\r\nHost: x\r\n\r\n");
        auto r = c.next(true);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->headers.value("Content-Length"), QByteArrayLiteral("12")); // {"name":"t"}
        c.send(get("/v1/info")); // the next response starts right after the head
        r = c.next();
        QVERIFY(r);
        QCOMPARE(r->body, QByteArrayLiteral("{\"name\":\"t\"}"));
    }

    void keepAliveAndPipelining() {
        RawClient c(start());
        c.send(get("/v1/info"));
        QCOMPARE(c.next()->status, 200);
        c.send("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + get("/v1/info"));
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->body, QByteArrayLiteral("hello"));
        QVERIFY(!r->headers.contains("Connection"));
        QCOMPARE(c.next()->status, 200);
        QVERIFY(c.isOpen());
    }

    void http10ClosesUnlessAskedNotTo() {
        RawClient c(start());
        c.send("GET /v1/info HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->headers.value("Connection"), QByteArrayLiteral("keep-alive"));
        c.send("GET /v1/info HTTP/1.0\r\n\r\n");
        r = c.next();
        QVERIFY(r);
        QCOMPARE(r->headers.value("Connection"), QByteArrayLiteral("close"));
        QVERIFY(c.waitClosed());
    }

    void expectContinueAndConnectionClose() {
        RawClient c(start());
        c.send("POST /v1/echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 100); // the client may now send the body
        c.send("abc");
        r = c.next();
        QVERIFY(r);
        QCOMPARE(r->body, QByteArrayLiteral("abc"));

        c.send("GET /v1/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->headers.value("Connection"), QByteArrayLiteral("close"));
        QVERIFY(c.waitClosed());
    }

    void handlerExceptionIs500() {
        RawClient c(start());
        QTest::ignoreMessage(QtWarningMsg, "http: handler for GET /v1/throw threw: boom");
        c.send(get("/v1/throw"));
        QCOMPARE(c.next()->status, 500);
    }

    void badRequests_data() {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<int>("status");
        QTest::newRow("garbage request line") << QByteArrayLiteral("HELLO\r\n\r\n") << 400;
        QTest::newRow("two spaces") << QByteArrayLiteral("GET  /v1/info HTTP/1.1\r\nHost: x\r\n\r\n") << 400;
        QTest::newRow("absolute form")
            << QByteArrayLiteral("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n") << 400;
        QTest::newRow("HTTP/2.0") << QByteArrayLiteral("GET / HTTP/2.0\r\nHost: x\r\n\r\n") << 505;
        QTest::newRow("no Host") << QByteArrayLiteral("GET /v1/info HTTP/1.1\r\n\r\n") << 400;
        QTest::newRow("obs-fold") << QByteArrayLiteral(
                                         "GET /v1/info HTTP/1.1\r\nHost: x\r\nA: b\r\n c\r\n\r\n")
                                  << 400;
        QTest::newRow("space before colon")
            << QByteArrayLiteral("GET /v1/info HTTP/1.1\r\nHost : x\r\n\r\n") << 400;
        QTest::newRow("bare LF") << QByteArrayLiteral("GET /v1/info HTTP/1.1\nHost: x\r\n\r\n") << 400;
        QTest::newRow("dot segment") << QByteArrayLiteral(
                                            "GET /v1/shards/0/1/%2e%2e HTTP/1.1\r\nHost: x\r\n\r\n")
                                     << 400;
        QTest::newRow("duplicate Content-Length")
            << QByteArrayLiteral(
                   "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na")
            << 400;
        QTest::newRow("bad Content-Length")
            << QByteArrayLiteral("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\na") << 400;
        QTest::newRow("chunked")
            << QByteArrayLiteral("POST /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "1\r\na\r\n0\r\n\r\n")
            << 501;
    }
    void badRequests() {
        QFETCH(QByteArray, request);
        QFETCH(int, status);
        RawClient c(start());
        c.send(request);
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, status);
        QCOMPARE(r->headers.value("Connection"), QByteArrayLiteral("close"));
        QVERIFY(c.waitClosed());
        QCOMPARE(m_echoCalls, 0);
    }

    void oversizedBodyRefusedUnread() {
        HttpServerConfig config;
        config.maxBodyBytes = 1024;
        RawClient c(start(config));
        // Only the head is sent: the 413 must not wait for the announced 10 MiB.
        c.send("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\nabc");
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 413);
        QCOMPARE(r->headers.value("Connection"), QByteArrayLiteral("close"));
        QVERIFY(c.waitClosed());
        QCOMPARE(m_echoCalls, 0);
    }

    void oversizedHeaders() {
        HttpServerConfig config;
        config.maxHeaderBytes = 4096;
        RawClient c(start(config));
        c.send("GET /v1/info HTTP/1.1\r\nHost: x\r\nX-Big: " + QByteArray(8000, 'a') + "\r\n\r\n");
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 431);
        QVERIFY(c.waitClosed());
    }

    void slowHeadersCutOff() {
        HttpServerConfig config;
        config.headerTimeout = std::chrono::milliseconds(300);
        config.lingerTimeout = std::chrono::milliseconds(100);
        RawClient c(start(config));
        QVERIFY(c.waitConnected());
        QElapsedTimer clock;
        clock.start();
        const QByteArray request = get("/v1/info");
        std::optional<Response> r;
        // One byte every 50 ms would finish the head in ~2 s; the deadline is 300 ms.
        for (qsizetype i = 0; i < request.size() && !r; ++i) {
            c.send(request.mid(i, 1));
            r = c.next(false, 50);
        }
        QVERIFY(r);
        QCOMPARE(r->status, 408);
        QVERIFY(c.waitClosed());
        QVERIFY2(clock.elapsed() < 1500, qPrintable(QString::number(clock.elapsed())));
    }

    void slowBodyCutOff() {
        HttpServerConfig config;
        config.bodyTimeout = std::chrono::milliseconds(300);
        config.lingerTimeout = std::chrono::milliseconds(100);
        RawClient c(start(config));
        c.send("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
        std::optional<Response> r;
        for (int i = 0; i < 100 && !r; ++i) {
            c.send("a");
            r = c.next(false, 50);
        }
        QVERIFY(r);
        QCOMPARE(r->status, 408);
        QVERIFY(c.waitClosed());
        QCOMPARE(m_echoCalls, 0);
    }

    void idleKeepAliveClosed() {
        HttpServerConfig config;
        config.idleTimeout = std::chrono::milliseconds(200);
        RawClient c(start(config));
        c.send(get("/v1/info"));
        QCOMPARE(c.next()->status, 200);
        QVERIFY(c.waitClosed(2000));
    }

    void connectionLimit() {
        HttpServerConfig config;
        config.maxConnections = 2;
        config.lingerTimeout = std::chrono::milliseconds(200);
        start(config);
        auto a = std::make_unique<RawClient>(m_server->port());
        RawClient b(m_server->port());
        QVERIFY(a->waitConnected() && b.waitConnected());
        QTRY_COMPARE(m_server->connectionCount(), 2);

        RawClient c(m_server->port());
        c.send(get("/v1/info"));
        auto r = c.next();
        QVERIFY(r);
        QCOMPARE(r->status, 503);
        QCOMPARE(r->headers.value("Retry-After"), QByteArrayLiteral("1"));
        QVERIFY(c.waitClosed());

        a.reset(); // a slot frees up
        QTRY_COMPARE(m_server->connectionCount(), 1);
        RawClient d(m_server->port());
        d.send(get("/v1/info"));
        QCOMPARE(d.next()->status, 200);
        b.send(get("/v1/info"));
        QCOMPARE(b.next()->status, 200);
    }

    void webSocketUpgradeHandedOver() {
        start();
        EchoWebSockets ws;
        m_server->setUpgradeHandler(QStringLiteral("/v1/session"), ws.handler());
        QWebSocket client;
        const QStringList received =
            hello(client, QUrl(QStringLiteral("ws://127.0.0.1:%1/v1/session").arg(m_server->port())));
        QCOMPARE(received, QStringList{QStringLiteral("echo: hi")});
        // Handed over, but still a connection of this server's (issue 17): it counts against the
        // limits until it closes.
        QCOMPARE(m_server->connectionCount(), 1);

        // A plain GET to the same path still goes through routing.
        {
            RawClient c(m_server->port());
            c.send(get("/v1/session"));
            QCOMPARE(c.next()->status, 404);
        }
        client.close();
        QTRY_COMPARE(m_server->connectionCount(), 0);
    }

    void webSocketUpgradeOverTls() {
        if (!QSslSocket::supportsSsl())
            QSKIP("Qt has no TLS backend here");
        QTemporaryDir dir;
        const QString cert = dir.filePath(QStringLiteral("tls.crt"));
        Result<TlsCertificate> tls =
            TlsCertificate::loadOrCreate(cert, dir.filePath(QStringLiteral("tls.key")));
        QVERIFY2(tls, tls ? "" : tls.message().c_str());
        HttpServerConfig config;
        config.tlsHandshakeTimeout = std::chrono::milliseconds(300);
        HttpServer server(config);
        server.useTls(*tls);
        EchoWebSockets ws;
        server.setUpgradeHandler(QStringLiteral("/v1/session"), ws.handler());
        QVERIFY(server.listen(QHostAddress::LocalHost).ok());

        QWebSocket client;
        QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
        ssl.setCaCertificates({tls->certificate()});
        client.setSslConfiguration(ssl);
        const QStringList received =
            hello(client, QUrl(QStringLiteral("wss://127.0.0.1:%1/v1/session").arg(server.port())));
        QCOMPARE(received, QStringList{QStringLiteral("echo: hi")});
        client.close();

        // A client that connects and never starts the TLS handshake is dropped.
        RawClient silent(server.port());
        QVERIFY(silent.waitConnected());
        QVERIFY(silent.waitClosed(3000));
    }
};

QTEST_GUILESS_MAIN(TestHttpServer)
#include "test_http_server.moc"
