// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeSession: the node's /v1/session WebSocket — opened with the bearer token, kept alive with
// heartbeats, reopened with back-off when the connection drops — or goes silent (no ack for three
// heartbeats) or its opening hangs. Text messages carry control, binary ones tensors (TaskMessage).
//
// States: Closed → Connecting → Open → (dropped) Connecting … ; a 1008 close (token revoked or
// expired) is final: `invalidated` tells the node to admit again.

#include "common/Backoff.h"
#include "node/session/SessionSender.h"
#include "protocol/SessionMessages.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QSslConfiguration>
#include <QTimer>
#include <QUrl>
#include <QWebSocket>

#include <chrono>

namespace tessera::node {

class NodeSession final : public QObject, public SessionSender {
    Q_OBJECT

public:
    // Results and shares written but not yet taken by the coordinator; past this the session is
    // dropped rather than the node's memory growing (a result is at most kTaskMessageMaxBytes).
    static constexpr qint64 kMaxUnsentBytes = qint64(1) << 30;

    NodeSession(QUrl url, QSslConfiguration ssl, std::chrono::milliseconds heartbeatInterval,
                QObject* parent = nullptr);

    void open(const QString& token);
    void close();
    bool isOpen() const { return m_socket.state() == QAbstractSocket::ConnectedState && m_open; }
    void send(const protocol::SessionMessage& message) override;
    // A binary message (a TaskMessage: a task's result, an averaging share); dropped when closed.
    // Written to the socket before it returns: `message` may be a view of a buffer about to go.
    void sendBinary(const QByteArray& message) override;
    qint64 lastAckMs() const { return m_lastAckMs; } // MonotonicClock::nowMs() of the last heartbeat ack
    // For the node's status: {open, lost_s (seconds since an open session dropped; 0 when open)}.
    QJsonObject status() const;

Q_SIGNALS:
    void opened();
    // A drop the session recovers from by itself (it reconnects).
    void dropped(const QString& reason);
    // The coordinator no longer accepts the token: admit again.
    void invalidated(const QString& reason);
    // A text message, typed and checked (one the coordinator may send; heartbeat acks stay here).
    void message(const tessera::protocol::ToNodeMessage& message);
    // A binary message as received (up to kTaskMessageMaxBytes); the receiver (NodeInbox) decodes it.
    void binaryMessage(const QByteArray& message);

private:
    void connectNow();
    void onText(const QString& text);
    void onDisconnected();
    void checkUnsent();

    QUrl m_url;
    QSslConfiguration m_ssl;
    QString m_token;
    QWebSocket m_socket;
    QTimer m_heartbeat;
    QTimer m_reconnect;
    QTimer m_opening;          // an opening that hangs is given up
    QElapsedTimer m_sinceAck;  // monotonic: a silent link is noticed whatever the wall clock does
    QElapsedTimer m_sinceDrop; // running while an open session is lost and being reopened
    Backoff m_backoff{std::chrono::seconds(1), std::chrono::seconds(60)};
    bool m_wanted = false;
    bool m_open = false;
    qint64 m_lastAckMs = 0;
};

} // namespace tessera::node
