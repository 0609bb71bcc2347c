#include "HttpServer.h"

#include "HttpConnection.h"
#include "common/TlsCertificate.h"

#include <QSslServer>
#include <QTcpServer>

namespace tessera::coordinator::http {

HttpServer::HttpServer(HttpServerConfig config, QObject* parent)
    : QObject(parent)
    , m_config(config) {}

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
    if (m_tls) {
        auto ssl = std::make_unique<QSslServer>();
        ssl->setSslConfiguration(*m_tls);
        ssl->setHandshakeTimeout(int(m_config.tlsHandshakeTimeout.count()));
        m_listener = std::move(ssl);
    } else {
        m_listener = std::make_unique<QTcpServer>();
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

void HttpServer::acceptPending() {
    while (QTcpSocket* socket = m_listener->nextPendingConnection()) {
        const bool counted = m_connections < m_config.maxConnections;
        auto* connection = new HttpConnection(*this, socket);
        if (counted) {
            ++m_connections;
            connect(connection, &HttpConnection::finished, this, [this] { --m_connections; });
            connection->start();
        } else {
            connection->reject(503, QStringLiteral("the server is at its connection limit; retry shortly"));
        }
    }
}

} // namespace tessera::coordinator::http
