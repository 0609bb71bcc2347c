// SPDX-License-Identifier: Apache-2.0
#pragma once
// SessionApi: the /v1/session WebSocket — a node's bearer token opens it, heartbeats keep the
// node online, and a missed heartbeat or a closed socket marks it offline.
//
// A connection's states: Handshake (QWebSocketServer reads the upgrade) → Authenticated (token
// valid: node online, heartbeats accepted) → Closed (node offline). A bad token goes Handshake →
// Closed with 1008 and changes nothing. One live session per node: a node's new session (its token
// again, or a newer one) closes the one it had with 1008, "replaced", so a token opens one socket
// however many times it is used.
//
// Heartbeats are answered at once but written in batches: every second (and before each sweep)
// the sessions heard since the last flush are stored in one transaction of a few IN-list
// statements, so 10,000 nodes heartbeating every 10 s cost one commit a second instead of 2,000
// row writes. The database's last_seen lags by at most the flush interval, and a session revoked
// meanwhile (the node was admitted again elsewhere) is closed at that flush.
//
// Every other message is checked against its schema (a binary one decoded here, once) and handed,
// typed, to the listener (the Trainer); one refused is answered with an error, and the session stays.

#include "coordinator/api/SessionListener.h"
#include "coordinator/http/HttpServer.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>

#include <chrono>
#include <memory>
#include <optional>

class QWebSocket;
class QWebSocketServer;

namespace tessera::coordinator {

class Database;
class Metrics;
struct SessionRecord;

struct SessionSettings {
    // A node silent for longer is offline and its socket is closed.
    std::chrono::milliseconds heartbeatTimeout{std::chrono::seconds(30)};
    // Text messages (heartbeats, control) are tiny: one passing maxMessageBytes is closed with
    // 1009 as its frames arrive. Binary messages (task results, averaging and gradient shares,
    // sync answers) may be up to maxBinaryBytes: the Coordinator sets it from the run (the largest
    // a node of this run legitimately sends, see NodeMessageCap), checked frame by frame too.
    qint64 maxMessageBytes = protocol::kSessionTextMaxBytes;
    qint64 maxBinaryBytes = qint64(256) << 20;
    // The largest frame read: what QWebSocket fragments into when it sends (512 KiB by default,
    // what the nodes send). A longer frame is refused from its header, before its payload is
    // read, so a socket never holds more than one frame that has not been checked.
    qint64 maxFrameBytes = 512 * 1024;
    // Messages per second a session may send, on average, with bursts up to messageBurst; a
    // flood is closed with 1008 rather than allowed to occupy the coordinator's thread.
    double messagesPerSecond = 5;
    double messageBurst = 20;
    // Binary messages answer tasks the router sent, so their rate follows the node's work; the
    // limit only stops a node flooding the coordinator with unsolicited ones.
    double binaryPerSecond = 500;
    double binaryBurst = 2000;
};

class SessionApi final : public QObject {
    Q_OBJECT

public:
    SessionApi(Database& db, Metrics& metrics, SessionSettings settings, QObject* parent = nullptr);
    ~SessionApi() override;

    // For HttpServer::setUpgradeHandler: takes over a socket that still holds the upgrade.
    http::HttpServer::UpgradeHandler upgradeHandler();
    // Messages still arriving take their bytes from `budget` (the HTTP server's, shared with
    // request bodies); a socket whose next frame does not fit is closed (1011). Not owned.
    void setByteBudget(http::ByteBudget* budget) { m_budget = budget; }
    int connectedCount() const { return int(m_live.size()); }
    // The data plane: hears data-plane messages and closes (not owned; may be null).
    void setListener(SessionListener* listener) { m_listener = listener; }
    // To the node's newest session; false when it has none.
    bool sendText(const QString& nodeId, const protocol::SessionMessage& message);
    bool sendBinary(const QString& nodeId, const QByteArray& message);
    bool isConnected(const QString& nodeId) const { return m_newest.contains(nodeId); }
    // Closes stale sockets and marks nodes offline whose last heartbeat is too old; runs on a
    // timer, public so that a test can run it at once.
    void sweep();
    // For a clean stop: closes every socket with 1001 (going away), marks their nodes offline
    // and stops the sweep. closing() stays true until the peers have taken the close frames.
    void closeAll(const QString& reason);
    // A banned node: its session tokens are revoked and its sockets closed with 1008 and `reason`.
    void closeNode(const QString& nodeId, const QString& reason);
    bool closing() const;

private:
    struct Live {
        QString tokenHash;
        QString nodeId;
        qint64 lastHeartbeatMs = 0;
        bool heartbeatUnsaved = false; // heard since the last flush
        // Token bucket of the message-rate limit.
        double messageAllowance = 0;
        qint64 allowanceAtMs = 0;
        double binaryAllowance = 0;
        qint64 binaryAllowanceAtMs = 0;
        // The message arriving, frame by frame: its bytes so far, and what it holds of the budget.
        qint64 textBytes = 0;
        qint64 binaryBytes = 0;
        qint64 budgetHeld = 0;
    };

    // A socket upgraded to /v1/session: its limits set, its token checked, its node admitted and online.
    void accept(QWebSocket* socket);
    // Each kind of message held to its limit as its frames arrive (onFrame), QWebSocket's own limits
    // as backstops.
    void limitIncoming(QWebSocket* socket) const;
    // The session the socket's bearer token opens; nullopt when it opens none (the socket is closed,
    // saying why).
    std::optional<SessionRecord> authenticate(QWebSocket* socket, qint64 now);
    // Whether the node may take part (not banned, a session protocol this coordinator speaks);
    // closed, saying why, when not.
    bool admits(QWebSocket* socket, const QString& nodeId, qint64 now);
    // The node online on this socket (its older sessions replaced), its messages heard.
    void open(QWebSocket* socket, const SessionRecord& session, qint64 now);
    void onText(QWebSocket* socket, const QString& text);
    // Spends one message from the session's allowance; false when it has none left.
    bool allowMessage(Live& live, qint64 nowMs) const;
    bool allowBinary(Live& live, qint64 nowMs) const;
    // Decoded once and checked against its schema, then to the listener; a malformed one is
    // answered with an error.
    void onBinary(QWebSocket* socket, const QByteArray& bytes);
    // A data frame arrived: counts it against the message's limit and the budget, and cuts the
    // socket off (1009, 1011) the moment either is passed.
    void onFrame(QWebSocket* socket, qint64 bytes, bool binary, bool last);
    // The message is delivered: its bytes go back to the budget.
    void messageDone(QWebSocket* socket);
    // Sessions of `nodeId` other than `except` (one live session per node) are closed.
    void replaceSessions(const QString& nodeId, const QWebSocket* except);
    // Writes the heartbeats heard since the last flush in one transaction; closes sessions that
    // turned out revoked or expired.
    void flushHeartbeats();
    // Forgets a socket; its node goes offline unless another of its sessions is connected.
    void drop(QWebSocket* socket);
    bool nodeHasOtherSession(const QString& nodeId, const QWebSocket* except) const;
    void publishCount();

    Database& m_db;
    Metrics& m_metrics;
    SessionSettings m_settings;
    std::unique_ptr<QWebSocketServer> m_server;
    QHash<QWebSocket*, Live> m_live;
    QHash<QString, QWebSocket*> m_newest; // node id → its newest live session
    SessionListener* m_listener = nullptr;
    http::ByteBudget* m_budget = nullptr;
    QList<QPointer<QWebSocket>> m_closing;
    QTimer m_sweepTimer;
    QTimer m_flushTimer;
};

} // namespace tessera::coordinator
