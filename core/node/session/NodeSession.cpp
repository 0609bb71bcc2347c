// SPDX-License-Identifier: Apache-2.0
#include "node/session/NodeSession.h"

#include "common/MonotonicClock.h"
#include "protocol/TaskMessage.h"

#include <QDateTime>
#include <QNetworkRequest>

namespace tessera::node {

NodeSession::NodeSession(QUrl url, QSslConfiguration ssl, std::chrono::milliseconds heartbeatInterval,
                         QObject* parent)
    : QObject(parent)
    , m_url(std::move(url))
    , m_ssl(std::move(ssl)) {
    m_heartbeat.setInterval(heartbeatInterval);
    connect(&m_heartbeat, &QTimer::timeout, this, [this] {
        // A link cut silently (a router, a NAT, a coordinator machine that vanished) brings no close:
        // without acks for three heartbeats (10 s at least) the socket is given up and opened again.
        if (m_open && m_sinceAck.isValid() && m_sinceAck.elapsed() > m_opening.interval()) {
            qWarning("node: no answer from the coordinator for %lld s; connecting again",
                     qlonglong(m_sinceAck.elapsed() / 1000));
            m_socket.abort();
            return;
        }
        send(protocol::Heartbeat{});
    });
    // Opening can hang as long as the link is cut (a TCP connection made, no TLS answer).
    m_opening.setSingleShot(true);
    m_opening.setInterval(
        std::max<std::chrono::milliseconds>(3 * heartbeatInterval, std::chrono::seconds(10)));
    connect(&m_opening, &QTimer::timeout, this, [this] {
        if (m_socket.state() != QAbstractSocket::UnconnectedState && !m_open) {
            qWarning("node: the coordinator did not answer the session's opening; trying again");
            m_socket.abort();
        }
    });
    m_reconnect.setSingleShot(true);
    connect(&m_reconnect, &QTimer::timeout, this, &NodeSession::connectNow);
    connect(&m_socket, &QWebSocket::connected, this, [this] {
        m_open = true;
        m_sinceDrop.invalidate();
        m_opening.stop();
        m_sinceAck.start();
        m_backoff.reset();
        m_heartbeat.start();
        send(protocol::Heartbeat{});
        Q_EMIT opened();
    });
    connect(&m_socket, &QWebSocket::textMessageReceived, this, &NodeSession::onText);
    connect(&m_socket, &QWebSocket::binaryMessageReceived, this, &NodeSession::binaryMessage);
    // The data plane's largest message (a stage's weights for a sync); anything bigger is refused
    // by the socket before it is buffered.
    m_socket.setMaxAllowedIncomingMessageSize(quint64(protocol::kTaskMessageMaxBytes));
    m_socket.setMaxAllowedIncomingFrameSize(quint64(protocol::kTaskMessageMaxBytes));
    connect(&m_socket, &QWebSocket::sslErrors, this, [](const QList<QSslError>& errors) {
        for (const QSslError& e : errors)
            qWarning("node: session TLS: %s", qPrintable(e.errorString()));
    });
    connect(&m_socket, &QWebSocket::disconnected, this, &NodeSession::onDisconnected);
}

void NodeSession::open(const QString& token) {
    m_token = token;
    m_wanted = true;
    m_backoff.reset();
    connectNow();
}

void NodeSession::close() {
    m_wanted = false;
    m_reconnect.stop();
    m_heartbeat.stop();
    m_opening.stop();
    if (m_socket.state() != QAbstractSocket::UnconnectedState)
        m_socket.close(QWebSocketProtocol::CloseCodeNormal, QStringLiteral("node stopping"));
}

void NodeSession::connectNow() {
    if (!m_wanted || m_socket.state() != QAbstractSocket::UnconnectedState)
        return;
    QNetworkRequest request(m_url);
    request.setSslConfiguration(m_ssl);
    m_socket.setSslConfiguration(m_ssl);
    request.setRawHeader("Authorization", "Bearer " + m_token.toLatin1());
    m_opening.start();
    m_socket.open(request);
}

void NodeSession::send(const protocol::SessionMessage& message) {
    if (m_socket.state() == QAbstractSocket::ConnectedState)
        m_socket.sendTextMessage(protocol::toText(message));
    checkUnsent();
}

void NodeSession::sendBinary(const QByteArray& message) {
    if (m_socket.state() == QAbstractSocket::ConnectedState)
        m_socket.sendBinaryMessage(message);
    checkUnsent();
}

void NodeSession::checkUnsent() {
    // A coordinator that stops reading would otherwise have the node hold every result it
    // computes from then on: the session is dropped (and reopened with back-off) instead.
    const qint64 unsent = m_socket.bytesToWrite();
    if (unsent <= kMaxUnsentBytes)
        return;
    qWarning("node: the coordinator has not read %lld MiB this node sent; dropping the session",
             qlonglong(unsent >> 20));
    m_socket.abort();
}

void NodeSession::onText(const QString& text) {
    Result<protocol::SessionMessage> m =
        protocol::parseSessionText(text, protocol::Direction::ToNode, protocol::kSessionTextMaxBytes);
    if (!m) {
        qWarning("node: refusing a message from the coordinator: %s", m.message().c_str());
        return;
    }
    // Parsed as sent to the node: it is always one of the node's messages.
    std::optional<protocol::ToNodeMessage> received =
        protocol::receivedAs<protocol::ToNodeMessage>(std::move(*m));
    if (!received)
        return;
    if (std::holds_alternative<protocol::HeartbeatAck>(*received)) {
        m_lastAckMs = MonotonicClock::nowMs();
        m_sinceAck.start();
        return;
    }
    Q_EMIT message(*received);
}

void NodeSession::onDisconnected() {
    const bool wasOpen = std::exchange(m_open, false);
    m_heartbeat.stop();
    m_opening.stop();
    const QString reason = m_socket.closeReason().isEmpty() ? m_socket.errorString() : m_socket.closeReason();
    if (!m_wanted)
        return;
    if (m_socket.closeCode() == QWebSocketProtocol::CloseCodePolicyViolated) {
        m_wanted = false;
        Q_EMIT invalidated(reason);
        return;
    }
    if (wasOpen) {
        m_sinceDrop.start();
        Q_EMIT dropped(reason);
    }
    m_reconnect.start(m_backoff.next());
}

QJsonObject NodeSession::status() const {
    return QJsonObject{
        {QStringLiteral("open"), isOpen()},
        {QStringLiteral("lost_s"), m_sinceDrop.isValid() ? double(m_sinceDrop.elapsed()) / 1000 : 0.0}};
}

} // namespace tessera::node
