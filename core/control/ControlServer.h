// SPDX-License-Identifier: Apache-2.0
#pragma once
// ControlServer: the node's local control socket; it authenticates and frames JSON-line requests,
// and the node's handler answers them.

#include "base/Result.h"
#include "protocol/ControlMessages.h"

#include <QByteArray>
#include <QJsonObject>
#include <QObject>
#include <QString>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

class QLocalServer;

namespace tessera::node {

// Protocol, one line each way: {"token":"…","command":"status","arguments":{…}} answered by
// {"ok":true,…} or {"ok":false,"error":"…"}. A wrong token or a line over 1 MiB is answered,
// then the connection closed; any other bad request leaves it open.
class ControlServer final : public QObject {
    Q_OBJECT

public:
    // Answers an authenticated, well-formed request (see protocol/ControlMessages), on the server's
    // thread. Its fields make the reply ("ok" is true unless it says otherwise; a handler
    // refuses with {"ok":false,"error":"…"}). An exception becomes an error reply.
    using Handler = std::function<QJsonObject(const protocol::ControlRequest& request)>;

    static constexpr int kMaxClients = 16;
    static constexpr std::chrono::milliseconds kIdleTimeout{60'000};

    ControlServer(QString dataDir, Handler handler, QObject* parent = nullptr);
    ~ControlServer() override;

    // Creates the data directory if needed, writes a fresh token and listens. Refuses while
    // another live node answers on the same data directory; a dead one's socket is replaced.
    Status listen();
    // Drops every client, removes the socket and the token. listen() may be called again.
    void close();

    bool isListening() const;
    int clientCount() const;
    QString socketPath() const; // empty until listen() succeeded

    // Tests shorten it; a client that sends nothing for this long is disconnected.
    void setIdleTimeout(std::chrono::milliseconds timeout) { m_idleTimeout = timeout; }

private:
    struct Connection;

    void acceptConnections();
    void readFrom(const std::shared_ptr<Connection>& connection);
    void answer(Connection& connection, const QByteArray& line);
    QJsonObject dispatch(const protocol::ControlRequest& request);
    void send(Connection& connection, const QJsonObject& reply);
    void refuseAndClose(Connection& connection, const QString& error);
    void closeConnection(Connection& connection);
    void drop(const Connection* connection);

    QString m_dataDir;
    Handler m_handler;
    QLocalServer* m_server = nullptr;
    QByteArray m_token;
    QString m_tokenDir; // the data dir whose token file is ours to remove
    std::vector<std::shared_ptr<Connection>> m_connections;
    std::chrono::milliseconds m_idleTimeout = kIdleTimeout;
};

} // namespace tessera::node
