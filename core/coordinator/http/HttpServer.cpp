// SPDX-License-Identifier: Apache-2.0
#include "HttpServer.h"

#include "HttpConnection.h"
#include "common/TlsCertificate.h"

#include <QSslServer>
#include <QTcpServer>
#include <QTcpSocket>

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tessera::coordinator::http {

namespace {

constexpr const char* kCountedAddress = "tesseraCountedAddress";

QHostAddress peerOf(qintptr descriptor) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getpeername(int(descriptor), reinterpret_cast<sockaddr*>(&address), &length) != 0)
        return {};
    return QHostAddress(reinterpret_cast<const sockaddr*>(&address));
}

// A listener that asks before it makes a socket (and, for TLS, before any handshake work), so that
// a host over its limit costs one accept and one close.
template <class Listener>
class GatedListener final : public Listener {
public:
    GatedListener(std::function<bool(const QHostAddress&)> admit,
                  std::function<void(QTcpSocket*, const QHostAddress&)> adopt)
        : m_admit(std::move(admit))
        , m_adopt(std::move(adopt)) {}

protected:
    void incomingConnection(qintptr descriptor) override {
        const QHostAddress peer = peerOf(descriptor);
        if (!m_admit(peer)) {
            ::close(int(descriptor));
            return;
        }
        if constexpr (std::is_same_v<Listener, QTcpServer>) {
            // What QTcpServer does, with the socket adopted before it is announced (and taken).
            auto* socket = new QTcpSocket(this);
            if (!socket->setSocketDescriptor(descriptor)) {
                delete socket;
                m_adopt(nullptr, peer);
                return;
            }
            m_adopt(socket, peer);
            this->addPendingConnection(socket);
            return;
        }
        Listener::incomingConnection(descriptor);
        // QSslServer made the socket as its child and keeps it until its handshake is done.
        const QList<QTcpSocket*> sockets =
            this->template findChildren<QTcpSocket*>(Qt::FindDirectChildrenOnly);
        for (auto it = sockets.crbegin(); it != sockets.crend(); ++it) {
            if ((*it)->socketDescriptor() == descriptor && !(*it)->property(kCountedAddress).isValid()) {
                m_adopt(*it, peer);
                return;
            }
        }
        m_adopt(nullptr, peer); // none was made (the descriptor was refused): give the count back
    }

private:
    std::function<bool(const QHostAddress&)> m_admit;
    std::function<void(QTcpSocket*, const QHostAddress&)> m_adopt;
};

} // namespace

HttpServer::HttpServer(HttpServerConfig config, QObject* parent)
    : QObject(parent)
    , m_config(config)
    , m_addresses(config.maxConnectionsPerAddress)
    , m_budget(config.maxBytesInFlight) {}

HttpServer::~HttpServer() = default;

void HttpServer::useTls(const TlsCertificate& tls) {
    QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
    ssl.setLocalCertificateChain(tls.certificateChain());
    ssl.setPrivateKey(tls.privateKey());
    ssl.setPeerVerifyMode(QSslSocket::VerifyNone); // clients authenticate with tokens, not certificates
    ssl.setProtocol(QSsl::TlsV1_2OrLater);
    m_tls = ssl;
}

Status HttpServer::listen(const QHostAddress& address, quint16 port) {
    auto admit = [this](const QHostAddress& peer) { return admitAddress(peer); };
    auto adopt = [this](QTcpSocket* socket, const QHostAddress& peer) { adoptSocket(socket, peer); };
    if (m_tls) {
        auto ssl = std::make_unique<GatedListener<QSslServer>>(admit, adopt);
        ssl->setSslConfiguration(*m_tls);
        ssl->setHandshakeTimeout(int(m_config.tlsHandshakeTimeout.count()));
        m_listener = std::move(ssl);
    } else {
        m_listener = std::make_unique<GatedListener<QTcpServer>>(admit, adopt);
    }
    // We take every connection as soon as it is ready and apply our own limit, so that the
    // one too many still gets a 503 instead of waiting unanswered in the backlog.
    m_listener->setMaxPendingConnections(qMax(m_config.maxConnections, 64) * 2);
    connect(m_listener.get(), &QTcpServer::pendingConnectionAvailable, this, &HttpServer::acceptPending);
    if (!m_listener->listen(address, port)) {
        const QString why = m_listener->errorString();
        m_listener.reset();
        return makeError("cannot listen on " + address.toString().toStdString() + ":" + std::to_string(port) +
                         ": " + why.toStdString());
    }
    return {};
}

quint16 HttpServer::port() const {
    return m_listener ? m_listener->serverPort() : 0;
}

void HttpServer::close() {
    if (m_listener)
        m_listener->close();
}

void HttpServer::route(const QByteArray& method, const QString& pattern, HttpHandler handler) {
    m_router.add(method, pattern, std::move(handler));
}

void HttpServer::setUpgradeHandler(const QString& path, UpgradeHandler handler) {
    m_upgrades.insert(path, std::move(handler));
}

const HttpServer::UpgradeHandler* HttpServer::upgradeHandler(const QString& path) const {
    const auto it = m_upgrades.constFind(path);
    return it == m_upgrades.cend() ? nullptr : &it.value();
}

void HttpServer::onceGone(QTcpSocket* socket, std::function<void()> release) {
    auto done = std::make_shared<bool>(false);
    auto once = [done, release = std::move(release)] {
        if (!std::exchange(*done, true))
            release();
    };
    connect(socket, &QAbstractSocket::disconnected, this, once);
    connect(socket, &QObject::destroyed, this, once);
}

bool HttpServer::admitAddress(const QHostAddress& peer) {
    const QString key = AddressCounter::keyOf(peer);
    if (m_addresses.acquire(key))
        return true;
    qInfo("http: refused a connection from %s: it has %d open, the most one address may hold",
          qUtf8Printable(key), m_addresses.limit());
    return false;
}

void HttpServer::adoptSocket(QTcpSocket* socket, const QHostAddress& peer) {
    const QString key = AddressCounter::keyOf(peer);
    if (socket == nullptr)
        return m_addresses.release(key);
    socket->setProperty(kCountedAddress, key);
    // Closed or destroyed, whichever comes first (a socket handed over as a WebSocket is deleted
    // only later, by its new owner): the address has one connection fewer.
    onceGone(socket, [this, key] { m_addresses.release(key); });
}

void HttpServer::acceptPending() {
    while (QTcpSocket* socket = m_listener->nextPendingConnection()) {
        const bool counted = m_connections < m_config.maxConnections;
        auto* connection = new HttpConnection(*this, socket);
        if (counted) {
            ++m_connections;
            // Counted until the socket goes, not the HttpConnection: an upgraded WebSocket keeps
            // its place.
            onceGone(socket, [this] { --m_connections; });
            connection->start();
        } else {
            connection->reject(503, QStringLiteral("the server is at its connection limit; retry shortly"));
        }
    }
}

} // namespace tessera::coordinator::http
