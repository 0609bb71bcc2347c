// SPDX-License-Identifier: Apache-2.0
#include "control/ControlConnection.h"

#include "common/PrivateSocketDir.h"
#include "control/ControlEndpoint.h"

#include <QDir>
#include <QJsonDocument>
#include <QLocalSocket>
#include <QPointer>
#include <QTimer>

namespace tessera::node {

struct ControlConnection::Pending {
    protocol::ControlRequest request;
    Callback callback;
    int timeoutMs = 5000;
};

ControlConnection::ControlConnection(QString dataDir, QObject* parent)
    : QObject(parent)
    , m_dataDir(std::move(dataDir))
    , m_timeout(new QTimer(this)) {
    m_timeout->setSingleShot(true);
    connect(m_timeout, &QTimer::timeout, this, [this] {
        // A late answer would be taken for the next request's: start over on a new connection.
        dropSocket();
        finish(makeError("tessera-node on " + QDir::toNativeSeparators(m_dataDir).toStdString() +
                         " did not answer in time"));
    });
}

ControlConnection::~ControlConnection() {
    m_socket.reset();
}

void ControlConnection::request(const protocol::ControlRequest& request, Callback callback, int timeoutMs) {
    auto pending = std::make_shared<Pending>();
    pending->request = request;
    pending->callback = std::move(callback);
    pending->timeoutMs = timeoutMs;
    m_queue.push_back(std::move(pending));
    if (m_queue.size() == 1)
        sendNext();
}

void ControlConnection::dropSocket() {
    // Later, not now: this may run inside one of the socket's own signals.
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket.release()->deleteLater();
    }
}

void ControlConnection::reset() {
    dropSocket();
    m_timeout->stop();
    auto queue = std::move(m_queue);
    m_queue.clear();
    m_sent = false;
    for (const auto& pending : queue) {
        if (pending->callback)
            pending->callback(makeError("cancelled"));
    }
}

void ControlConnection::sendNext() {
    if (m_queue.empty())
        return;
    const Pending& pending = *m_queue.front();
    m_sent = false;
    m_timeout->start(pending.timeoutMs);

    const ControlEndpoint endpoint(m_dataDir);
    // Every node start writes a new token, so it is read for each new connection.
    Result<QByteArray> token = endpoint.readToken();
    if (!token) {
        QTimer::singleShot(0, this, [this, error = token.error()] { finish(error); });
        return;
    }
    const QByteArray line = protocol::requestLine(pending.request, *token);

    if (m_socket && m_socket->state() == QLocalSocket::ConnectedState) {
        m_socket->write(line);
        m_sent = true;
        return;
    }
    // The token goes only to a socket this user owns (the temp-dir fallback is shared).
    if (Status socketFile = endpoint.checkSocketFile(); !socketFile) {
        QTimer::singleShot(0, this, [this, error = socketFile.error()] { finish(error); });
        return;
    }
    m_buffer.clear();
    m_socket = std::make_unique<QLocalSocket>();
    QLocalSocket* socket = m_socket.get();
    connect(socket, &QLocalSocket::connected, this, [this, socket, line] {
        if (socket != m_socket.get())
            return;
        // The listener's own uid is what would receive the token.
        if (const std::optional<unsigned> peer = PrivateSocketDir::peerUid(socket->socketDescriptor());
            peer && *peer != PrivateSocketDir::ownUid()) {
            dropSocket();
            finish(makeError("the control socket of tessera-node on " +
                             QDir::toNativeSeparators(m_dataDir).toStdString() +
                             " is held by another user (uid " + std::to_string(*peer) +
                             "); refusing to send it the token"));
            return;
        }
        socket->write(line);
        m_sent = true;
    });
    connect(socket, &QLocalSocket::readyRead, this, &ControlConnection::onReadyRead);
    connect(socket, &QLocalSocket::errorOccurred, this, [this, socket](QLocalSocket::LocalSocketError error) {
        if (socket != m_socket.get())
            return;
        const std::string where = QDir::toNativeSeparators(m_dataDir).toStdString();
        std::string message;
        if (error == QLocalSocket::ServerNotFoundError || error == QLocalSocket::ConnectionRefusedError)
            message = "no tessera-node is running on " + where;
        else if (error == QLocalSocket::PeerClosedError)
            message = "tessera-node on " + where + " closed the connection without answering";
        else
            message = "cannot talk to tessera-node on " + where + ": " + socket->errorString().toStdString();
        dropSocket();
        if (!m_queue.empty())
            finish(makeError(message));
    });
    socket->connectToServer(endpoint.socketPath());
}

void ControlConnection::onReadyRead() {
    if (!m_socket)
        return;
    m_buffer += m_socket->readAll();
    const qsizetype newline = m_buffer.indexOf('\n');
    if (newline < 0) {
        if (m_buffer.size() > ControlEndpoint::kMaxMessageBytes) {
            dropSocket();
            finish(makeError("tessera-node sent a reply over 1 MiB"));
        }
        return;
    }
    const QByteArray line = m_buffer.left(newline);
    m_buffer.remove(0, newline + 1);
    if (m_queue.empty() || !m_sent)
        return; // nothing asked: ignore
    const QJsonDocument document = QJsonDocument::fromJson(line);
    if (!document.isObject()) {
        finish(makeError("tessera-node sent a malformed reply"));
        return;
    }
    QJsonObject reply = document.object();
    if (!reply.value(u"ok").toBool(true)) {
        const QString error = reply.value(u"error").toString();
        finish(makeError(error.isEmpty() ? "tessera-node refused the request" : error.toStdString()));
        return;
    }
    finish(std::move(reply));
}

void ControlConnection::finish(Result<QJsonObject> result) {
    if (m_queue.empty())
        return;
    m_timeout->stop();
    const std::shared_ptr<Pending> pending = m_queue.front();
    m_queue.pop_front();
    m_sent = false;
    QPointer<ControlConnection> alive(this);
    if (pending->callback)
        pending->callback(std::move(result));
    if (alive && !m_queue.empty())
        sendNext();
}

} // namespace tessera::node
