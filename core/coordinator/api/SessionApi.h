#pragma once
// SessionApi: the /v1/session WebSocket — a node's bearer token opens it, heartbeats keep the
// node online, and a missed heartbeat or a closed socket marks it offline.
//
// A connection's states: Handshake (QWebSocketServer reads the upgrade) → Authenticated (token
// valid: node online, heartbeats accepted) → Closed (node offline unless another of its sessions
// is still connected). A bad token goes Handshake → Closed with 1008 and changes nothing.

#include "coordinator/http/HttpServer.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>

#include <chrono>
#include <memory>

class QWebSocket;
class QWebSocketServer;

namespace tessera::coordinator {

class Database;
class Metrics;

struct SessionSettings {
    // A node silent for longer is offline and its socket is closed.
    std::chrono::milliseconds heartbeatTimeout{std::chrono::seconds(30)};
    // Heartbeats are tiny; a bigger frame or message is closed with 1009.
    qint64 maxMessageBytes = 16 * 1024;
};

class SessionApi final : public QObject {
    Q_OBJECT

public:
    SessionApi(Database& db, Metrics& metrics, SessionSettings settings, QObject* parent = nullptr);
    ~SessionApi() override;

    // For HttpServer::setUpgradeHandler: takes over a socket that still holds the upgrade.
    http::HttpServer::UpgradeHandler upgradeHandler();
    int connectedCount() const { return int(m_live.size()); }
    // Closes stale sockets and marks nodes offline whose last heartbeat is too old; runs on a
    // timer, public so that a test can run it at once.
    void sweep();
    // For a clean stop: closes every socket with 1001 (going away), marks their nodes offline
    // and stops the sweep. closing() stays true until the peers have taken the close frames.
    void closeAll(const QString& reason);
    bool closing() const;

private:
    struct Live {
        QString tokenHash;
        QString nodeId;
        qint64 lastHeartbeatMs = 0;
    };

    void accept(QWebSocket* socket);
    void onText(QWebSocket* socket, const QString& message);
    // Forgets a socket; its node goes offline unless another of its sessions is connected.
    void drop(QWebSocket* socket);
    bool nodeHasOtherSession(const QString& nodeId, const QWebSocket* except) const;
    void publishCount();

    Database& m_db;
    Metrics& m_metrics;
    SessionSettings m_settings;
    std::unique_ptr<QWebSocketServer> m_server;
    QHash<QWebSocket*, Live> m_live;
    QList<QPointer<QWebSocket>> m_closing;
    QTimer m_sweepTimer;
};

} // namespace tessera::coordinator
