// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorLimitsFixture: what the coordinator's limit tests share — a shared tiny run started
// once, runs of their own with other options, an HTTPS client trusting them, curl, and a raw
// HTTP/1.1 exchange.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"

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

namespace tessera::test {

using Reply = test::HttpReply;

constexpr qint64 kGiB = qint64(1) << 30;

inline Identity newIdentity() {
    Result<Identity> id = Identity::generate();
    if (!id)
        qFatal("Identity::generate: %s", id.message().c_str());
    return std::move(*id);
}

// The status code of an HTTP/1.1 response's status line, 0 when there is none.
inline int statusOf(const QByteArray& response) {
    if (!response.startsWith("HTTP/1.1 ") || response.size() < 12)
        return 0;
    return response.mid(9, 3).toInt();
}

// One request on a new plain-HTTP connection; the response as read until the server closed
// the connection. Waits with the event loop running, so timers in the test keep firing.
inline QByteArray rawExchange(quint16 port, const QByteArray& request, int timeoutMs = 5'000) {
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

// A plain TCP connection from `from` (another loopback address, 127.0.0.2, is another host to the
// coordinator); connected, or null.
inline std::unique_ptr<QTcpSocket> connectFrom(const QHostAddress& from, quint16 port) {
    auto socket = std::make_unique<QTcpSocket>();
    if (!socket->bind(from, 0))
        return nullptr;
    socket->connectToHost(QStringLiteral("127.0.0.1"), port);
    if (!socket->waitForConnected(5'000))
        return nullptr;
    return socket;
}

// One request from `from` on a new connection; the response until the server closed it.
inline QByteArray rawExchangeFrom(const QHostAddress& from, quint16 port, const QByteArray& request,
                                  int timeoutMs = 5'000) {
    std::unique_ptr<QTcpSocket> socket = connectFrom(from, port);
    if (!socket)
        return {};
    QByteArray response;
    socket->write(request);
    (void)QTest::qWaitFor(
        [&] {
            response += socket->readAll();
            return socket->state() == QAbstractSocket::UnconnectedState;
        },
        timeoutMs);
    return response + socket->readAll();
}

inline QByteArray getStatusRequest() {
    return QByteArrayLiteral("GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

inline quint16 portOf(const CoordinatorProcess& p) {
    return quint16(QUrl(p.url()).port());
}

class CoordinatorLimitsFixture : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

protected:
    Reply send(const QString& base, const QByteArray& method, const QString& path,
               const QByteArray& body = {}) {
        return test::httpRequest(m_net, m_ssl, base + path, method, body);
    }
    Reply get(const QString& path) { return send(m_server->url(), "GET", path); }
    // challenge → signed admission, claiming `memoryBytes` and `version`; the request body is
    // returned for replays and tampering.
    Reply admit(const QString& base, const Identity& id, qint64 memoryBytes = 8 * kGiB,
                const QString& version = QStringLiteral("0.2.0"), QJsonObject* request = nullptr) {
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

} // namespace tessera::test
