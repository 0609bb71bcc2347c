// SPDX-License-Identifier: Apache-2.0
#include "control/ControlServer.h"

#include "control/ControlEndpoint.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QLocalServer>
#include <QLocalSocket>
#include <QTimer>

#include <openssl/crypto.h>

#include <algorithm>
#include <exception>

namespace tessera::node {

namespace {

constexpr qint64 kMaxMessageBytes = ControlEndpoint::kMaxMessageBytes;
// Qt's own read buffer is capped too, so a client never makes the node hold more than a
// message and a chunk.
constexpr qint64 kReadChunkBytes = 64 * 1024;
// A client that stops reading must not keep its slot once the server closes it.
constexpr std::chrono::milliseconds kCloseGrace{5'000};
constexpr int kProbeTimeoutMs = 1'000;

std::string str(const QString& s) {
    return QDir::toNativeSeparators(s).toStdString();
}

QJsonObject errorReply(const QString& error) {
    return {{QStringLiteral("ok"), false}, {QStringLiteral("error"), error}};
}

QByteArray replyLine(const QJsonObject& reply) {
    QByteArray bytes = QJsonDocument(reply).toJson(QJsonDocument::Compact);
    if (bytes.size() > kMaxMessageBytes)
        bytes = QJsonDocument(errorReply(QStringLiteral("reply over 1 MiB"))).toJson(QJsonDocument::Compact);
    return bytes + '\n';
}

// Constant time, so the answer's timing never tells how much of a guess was right.
bool sameToken(const QByteArray& presented, const QByteArray& expected) {
    return !expected.isEmpty() && presented.size() == expected.size() &&
           CRYPTO_memcmp(presented.constData(), expected.constData(), static_cast<size_t>(expected.size())) ==
               0;
}

bool liveServerAt(const QString& path) {
    QLocalSocket probe;
    probe.connectToServer(path);
    const bool live = probe.waitForConnected(kProbeTimeoutMs);
    probe.abort();
    return live;
}

} // namespace

struct ControlServer::Connection {
    QLocalSocket* socket = nullptr; // a child of m_server
    QTimer* timer = nullptr;        // the idle timeout; the close grace once closing
    QByteArray pending;             // the line being received: at most kMaxMessageBytes + 1 bytes
    bool closing = false;
};

ControlServer::ControlServer(QString dataDir, Handler handler, QObject* parent)
    : QObject(parent)
    , m_dataDir(std::move(dataDir))
    , m_handler(std::move(handler))
    , m_server(new QLocalServer(this)) {
    // The socket file is created owner-only before it becomes reachable at its name.
    m_server->setSocketOptions(QLocalServer::UserAccessOption);
    connect(m_server, &QLocalServer::newConnection, this, &ControlServer::acceptConnections);
}

ControlServer::~ControlServer() {
    close();
}

Status ControlServer::listen() {
    if (m_server->isListening())
        return makeError("the control socket for " + str(m_dataDir) + " is already listening");
    if (!QDir().mkpath(m_dataDir))
        return makeError("cannot create data directory " + str(m_dataDir));
    const ControlEndpoint endpoint(m_dataDir);
    const QString path = endpoint.socketPath();
    if (Status socketFile = endpoint.checkSocketFile(); !socketFile)
        return socketFile;
    if (QFileInfo::exists(path)) {
        // Checked before the token is replaced: a running node's clients must keep working.
        if (liveServerAt(path))
            return makeError("another tessera-node is running on " + str(m_dataDir));
        // A node that died without closing left its socket behind; nothing answers there.
        if (!QLocalServer::removeServer(path))
            return makeError("cannot remove the stale control socket " + str(path));
    }
    Result<QByteArray> token = endpoint.writeNewToken();
    if (!token)
        return token.error();
    if (!m_server->listen(path)) {
        endpoint.removeToken(*token);
        return makeError("cannot listen on control socket " + str(path) + ": " +
                         m_server->errorString().toStdString());
    }
    m_token = std::move(token).value();
    m_tokenDir = m_dataDir;
    return {};
}

void ControlServer::close() {
    for (const std::shared_ptr<Connection>& connection : m_connections) {
        connection->closing = true;
        connection->timer->stop();
        QObject::disconnect(connection->socket, nullptr, this, nullptr);
        connection->socket->abort();
        connection->socket->deleteLater();
    }
    m_connections.clear();
    if (m_server->isListening())
        m_server->close(); // removes the socket file
    if (!m_token.isEmpty()) {
        ControlEndpoint(m_tokenDir).removeToken(m_token);
        m_token.clear();
    }
}

bool ControlServer::isListening() const {
    return m_server->isListening();
}

int ControlServer::clientCount() const {
    return static_cast<int>(m_connections.size());
}

QString ControlServer::socketPath() const {
    return m_server->isListening() ? m_server->fullServerName() : QString();
}

void ControlServer::acceptConnections() {
    while (m_server->hasPendingConnections()) {
        QLocalSocket* socket = m_server->nextPendingConnection();
        if (clientCount() >= kMaxClients) {
            // Answered rather than dropped, so `tessera-node status` says why.
            connect(socket, &QLocalSocket::disconnected, socket, &QObject::deleteLater);
            QTimer::singleShot(kCloseGrace, socket, [socket] { socket->abort(); });
            socket->write(replyLine(
                errorReply(QStringLiteral("too many control connections (%1); try again").arg(kMaxClients))));
            socket->disconnectFromServer();
            continue;
        }
        auto connection = std::make_shared<Connection>();
        connection->socket = socket;
        socket->setReadBufferSize(kReadChunkBytes);
        connection->timer = new QTimer(socket);
        connection->timer->setSingleShot(true);
        connection->timer->start(m_idleTimeout);
        m_connections.push_back(connection);

        const std::weak_ptr<Connection> weak = connection;
        connect(socket, &QLocalSocket::readyRead, this, [this, weak] {
            if (const std::shared_ptr<Connection> c = weak.lock())
                readFrom(c);
        });
        // Queued: disconnectFromServer() may emit it while readFrom() still uses the connection.
        connect(
            socket, &QLocalSocket::disconnected, this,
            [this, weak] {
                if (const std::shared_ptr<Connection> c = weak.lock())
                    drop(c.get());
            },
            Qt::QueuedConnection);
        connect(connection->timer, &QTimer::timeout, this, [this, weak] {
            const std::shared_ptr<Connection> c = weak.lock();
            if (!c)
                return;
            if (c->closing)
                c->socket->abort();
            else
                closeConnection(*c);
        });
    }
}

void ControlServer::readFrom(const std::shared_ptr<Connection>& connection) {
    // `connection` keeps the state alive even when the handler closes the server meanwhile.
    Connection& c = *connection;
    if (c.closing) {
        c.socket->read(c.socket->bytesAvailable());
        return;
    }
    c.timer->start(m_idleTimeout);
    qsizetype scanned = 0;
    for (;;) {
        for (qsizetype newline = c.pending.indexOf('\n', scanned); newline >= 0 && !c.closing;
             newline = c.pending.indexOf('\n')) {
            const QByteArray line = c.pending.left(newline);
            c.pending.remove(0, newline + 1);
            answer(c, line);
        }
        if (c.closing)
            return;
        if (c.pending.size() > kMaxMessageBytes) {
            refuseAndClose(c, QStringLiteral("message over 1 MiB"));
            return;
        }
        scanned = c.pending.size();
        const qint64 room = kMaxMessageBytes + 1 - c.pending.size();
        const qint64 n = std::min({c.socket->bytesAvailable(), room, kReadChunkBytes});
        if (n <= 0)
            return;
        c.pending += c.socket->read(n);
    }
}

void ControlServer::answer(Connection& connection, const QByteArray& line) {
    if (line.trimmed().isEmpty())
        return;
    QJsonParseError error{};
    const QJsonDocument document = QJsonDocument::fromJson(line, &error);
    if (error.error != QJsonParseError::NoError) {
        send(connection, errorReply(QStringLiteral("malformed JSON at offset %1: %2")
                                        .arg(error.offset)
                                        .arg(error.errorString())));
        return;
    }
    if (!document.isObject()) {
        send(connection, errorReply(QStringLiteral("a request must be a JSON object")));
        return;
    }
    const QJsonObject request = document.object();
    const QJsonValue token = request.value(u"token");
    if (!token.isString() || !sameToken(token.toString().toUtf8(), m_token)) {
        refuseAndClose(connection, QStringLiteral("wrong control token"));
        return;
    }
    Result<protocol::ControlRequest> command = protocol::parseControlRequest(request);
    if (!command) {
        send(connection, errorReply(QString::fromStdString(command.message())));
        return;
    }
    send(connection, dispatch(*command));
}

QJsonObject ControlServer::dispatch(const protocol::ControlRequest& request) {
    if (!m_handler)
        return errorReply(QStringLiteral("this node answers no commands"));
    const QString command = protocol::controlCommandName(request.command);
    QJsonObject reply;
    try {
        reply = m_handler(request);
    } catch (const std::exception& e) {
        return errorReply(command + QStringLiteral(" failed: ") + QString::fromLocal8Bit(e.what()));
    } catch (...) {
        return errorReply(command + QStringLiteral(" failed"));
    }
    if (!reply.contains(u"ok"))
        reply.insert(QStringLiteral("ok"), true);
    return reply;
}

void ControlServer::send(Connection& connection, const QJsonObject& reply) {
    if (!connection.closing)
        connection.socket->write(replyLine(reply));
}

void ControlServer::refuseAndClose(Connection& connection, const QString& error) {
    send(connection, errorReply(error));
    closeConnection(connection);
}

void ControlServer::closeConnection(Connection& connection) {
    if (connection.closing)
        return;
    connection.closing = true;
    connection.pending = QByteArray();
    connection.timer->start(kCloseGrace);
    connection.socket->disconnectFromServer(); // after the queued reply is written
}

void ControlServer::drop(const Connection* connection) {
    const auto it = std::find_if(m_connections.begin(), m_connections.end(),
                                 [connection](const auto& c) { return c.get() == connection; });
    if (it == m_connections.end())
        return;
    (*it)->timer->stop();
    QObject::disconnect((*it)->socket, nullptr, this, nullptr);
    QObject::disconnect((*it)->timer, nullptr, this, nullptr);
    (*it)->socket->deleteLater();
    m_connections.erase(it);
}

} // namespace tessera::node
