// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpServer: a small, strict HTTP/1.1 server over TCP or TLS with routes, file streaming with
// byte ranges, and a hand-over of WebSocket upgrades.
//
// A connection is counted from its TCP accept (before any TLS handshake) until its socket is
// destroyed, against the limit per address (AddressCounter) and, once it is handed to
// HttpConnection, the total: a socket handed over as a WebSocket still counts until it closes.

#include "AddressCounter.h"
#include "ByteBudget.h"
#include "HttpRouter.h"
#include "HttpServerConfig.h"
#include "base/Result.h"

#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QSslConfiguration>

#include <functional>
#include <memory>
#include <optional>

class QTcpServer;
class QTcpSocket;

namespace tessera {
class TlsCertificate;
}

namespace tessera::coordinator::http {

class HttpConnection;

class HttpServer final : public QObject {
    Q_OBJECT

public:
    using UpgradeHandler = std::function<void(QTcpSocket*)>;

    explicit HttpServer(HttpServerConfig config = {}, QObject* parent = nullptr);
    ~HttpServer() override;

    // Serve HTTPS with this certificate; call before listen().
    void useTls(const TlsCertificate& tls);
    Status listen(const QHostAddress& address, quint16 port = 0);
    quint16 port() const;
    void close();

    void route(const QByteArray& method, const QString& pattern, HttpHandler handler);
    // A GET to `path` with "Upgrade: websocket" is handed to `handler` untouched: the socket
    // still holds the whole request (QWebSocketServer::handleConnection reads it) and now
    // belongs to the handler (it has no parent). Other requests to `path` go to the routes.
    void setUpgradeHandler(const QString& path, UpgradeHandler handler);

    const HttpServerConfig& config() const { return m_config; }
    int connectionCount() const { return m_connections; }
    // The bytes of partially received bodies and messages across every connection; SessionApi
    // takes from the same budget for its WebSocket messages.
    ByteBudget& byteBudget() { return m_budget; }
    const AddressCounter& addresses() const { return m_addresses; }
    // The most bytes ever queued in one socket while streaming a file: a test seam for the
    // memory bound, and a number for /metrics.
    qint64 peakQueuedBytes() const { return m_peakQueuedBytes; }

private:
    friend class HttpConnection;
    const HttpRouter& router() const { return m_router; }
    const UpgradeHandler* upgradeHandler(const QString& path) const;
    void noteQueuedBytes(qint64 bytes) { m_peakQueuedBytes = qMax(m_peakQueuedBytes, bytes); }
    void acceptPending();
    // A TCP connection accepted by the listener: counted for its address, or false (to be closed).
    bool admitAddress(const QHostAddress& peer);
    // The socket made for it: the count is given back when it is destroyed.
    void adoptSocket(QTcpSocket* socket, const QHostAddress& peer);
    // Calls `release` once, when the socket is closed or destroyed, whichever comes first.
    void onceGone(QTcpSocket* socket, std::function<void()> release);

    HttpServerConfig m_config;
    HttpRouter m_router;
    QHash<QString, UpgradeHandler> m_upgrades;
    std::optional<QSslConfiguration> m_tls;
    std::unique_ptr<QTcpServer> m_listener;
    int m_connections = 0;
    AddressCounter m_addresses;
    ByteBudget m_budget;
    qint64 m_peakQueuedBytes = 0;
};

} // namespace tessera::coordinator::http
