// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/SessionApi.h"

#include "common/WallClock.h"
#include "coordinator/admission/AdmissionService.h"
#include "coordinator/api/Metrics.h"
#include "coordinator/api/SessionLimits.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/SessionStore.h"
#include "protocol/ClientVersion.h"
#include "protocol/TaskMessage.h"

#include <QJsonObject>
#include <QSet>
#include <QTcpSocket>
#include <QWebSocket>
#include <QWebSocketServer>

#include <algorithm>
#include <optional>
#include <utility>

namespace tessera::coordinator {

namespace {

qint64 nowMs() {
    return WallClock::nowMs();
}

void reply(QWebSocket* socket, const protocol::SessionMessage& message) {
    socket->sendTextMessage(protocol::toText(message));
}

// A peer that never answers the close frame (gone, or hostile) is cut off anyway.
constexpr std::chrono::seconds kCloseGrace{5};

// Callers drop() the socket first: close() may deliver frames still buffered, re-entering
// onText for a socket that is on its way out.
void closeSocket(QWebSocket* socket, QWebSocketProtocol::CloseCode code, const QString& reason) {
    socket->close(code, reason);
    QTimer::singleShot(kCloseGrace, socket, [socket] { socket->abort(); });
}

// A socket over a limit on what it sends: the close frame is pushed out and the socket dropped at
// once, so that nothing more it sends is read (and held).
void cutOff(QWebSocket* socket, QWebSocketProtocol::CloseCode code, const QString& reason) {
    socket->close(code, reason);
    socket->flush();
    socket->abort();
}

void replyError(QWebSocket* socket, const QString& error) {
    reply(socket, protocol::ErrorNotice{error.left(protocol::kMaxReasonChars)});
}

// "Bearer <token>" → token; empty when the header is missing or has another scheme.
QString bearerToken(const QByteArray& authorization) {
    const QByteArray scheme = "bearer ";
    if (authorization.size() <= scheme.size() || authorization.left(scheme.size()).toLower() != scheme)
        return {};
    return QString::fromLatin1(authorization.mid(scheme.size()).trimmed());
}

} // namespace

SessionApi::SessionApi(Database& db, Metrics& metrics, SessionSettings settings, QObject* parent)
    : QObject(parent)
    , m_db(db)
    , m_metrics(metrics)
    , m_settings(settings)
    , m_server(std::make_unique<QWebSocketServer>(QStringLiteral("tessera-coordinator"),
                                                  QWebSocketServer::NonSecureMode)) {
    // NonSecureMode even behind TLS: HttpServer hands over a QSslSocket that is already
    // encrypted, and QWebSocketServer only speaks the WebSocket protocol over it.
    connect(m_server.get(), &QWebSocketServer::newConnection, this, [this] {
        while (QWebSocket* socket = m_server->nextPendingConnection())
            accept(socket);
    });
    // Checking a few times per timeout bounds how late a silent node is noticed.
    m_sweepTimer.setInterval(std::clamp(m_settings.heartbeatTimeout / 4, std::chrono::milliseconds(50),
                                        std::chrono::milliseconds(5000)));
    connect(&m_sweepTimer, &QTimer::timeout, this, &SessionApi::sweep);
    m_sweepTimer.start();
    // Small batches often: one big batch every few seconds would stall the event loop (and every
    // request behind it) for as long as it takes to write.
    m_flushTimer.setInterval(std::min(m_sweepTimer.intervalAsDuration(), std::chrono::milliseconds(1000)));
    connect(&m_flushTimer, &QTimer::timeout, this, &SessionApi::flushHeartbeats);
    m_flushTimer.start();
    publishCount();
}

SessionApi::~SessionApi() {
    // Sockets still open go with the process; their nodes are found offline by the next
    // start's sweep, so nothing is written here.
    for (auto it = m_live.begin(); it != m_live.end(); ++it) {
        it.key()->disconnect(this);
        it.key()->abort();
        delete it.key();
    }
}

http::HttpServer::UpgradeHandler SessionApi::upgradeHandler() {
    return [this](QTcpSocket* socket) {
        // Ours now (QWebSocket does not own it): gone with its connection.
        connect(socket, &QAbstractSocket::disconnected, socket, &QObject::deleteLater);
        m_server->handleConnection(socket);
    };
}

void SessionApi::accept(QWebSocket* socket) {
    connect(socket, &QWebSocket::disconnected, socket, &QObject::deleteLater);
    limitIncoming(socket);
    const qint64 now = nowMs();
    const std::optional<SessionRecord> session = authenticate(socket, now);
    if (!session || !admits(socket, session->nodeId, now))
        return;
    open(socket, *session, now);
}

void SessionApi::limitIncoming(QWebSocket* socket) const {
    // Each kind is held to its own limit frame by frame in onFrame; QWebSocket's own limits are
    // backstops. The socket's buffer holds at most one frame being read.
    const qint64 maxBytes = std::max(m_settings.maxMessageBytes, m_settings.maxBinaryBytes);
    const qint64 frameBytes = std::min(m_settings.maxFrameBytes, maxBytes);
    socket->setMaxAllowedIncomingFrameSize(quint64(frameBytes));
    socket->setMaxAllowedIncomingMessageSize(quint64(maxBytes + frameBytes)); // after onFrame's
    socket->setReadBufferSize(frameBytes + 64 * 1024);
}

std::optional<SessionRecord> SessionApi::authenticate(QWebSocket* socket, qint64 now) {
    const QString token = bearerToken(socket->request().rawHeader("Authorization"));
    const QString tokenHash = token.isEmpty() ? QString() : AdmissionService::sessionTokenHash(token);
    Result<std::optional<SessionRecord>> session =
        tokenHash.isEmpty() ? Result<std::optional<SessionRecord>>(std::optional<SessionRecord>())
                            : SessionStore(m_db).findValid(tokenHash, now);
    if (!session) {
        qWarning("coordinator: looking up a session failed: %s", session.message().c_str());
        closeSocket(socket, QWebSocketProtocol::CloseCodeBadOperation,
                    QStringLiteral("the coordinator failed to check the session; try again later"));
        return std::nullopt;
    }
    if (!*session) {
        m_metrics.countSession(QStringLiteral("rejected"));
        closeSocket(socket, QWebSocketProtocol::CloseCodePolicyViolated,
                    token.isEmpty() ? QStringLiteral("missing Authorization: Bearer <session token>")
                                    : QStringLiteral("invalid, expired or revoked session token; "
                                                     "admit again for a new one"));
        return std::nullopt;
    }
    return *session;
}

bool SessionApi::admits(QWebSocket* socket, const QString& nodeId, qint64 now) {
    // A node admitted before this coordinator was upgraded may speak an older session protocol:
    // it is told so in words (and its next admission is refused with the minimum version).
    Result<std::optional<NodeRecord>> node = NodeRegistry(m_db).find(nodeId);
    if (!node || !*node)
        return true;
    // A banned node (a failed audit, strikes) or one from a banned network takes no part.
    if (Result<std::optional<QString>> banned = Reputation(m_db).banned(nodeId, (*node)->network, now);
        banned && *banned) {
        m_metrics.countSession(QStringLiteral("rejected"));
        closeSocket(socket, QWebSocketProtocol::CloseCodePolicyViolated, (**banned).left(120));
        return false;
    }
    const Result<protocol::ClientVersion> version = protocol::ClientVersion::parse((*node)->clientVersion);
    if (!version || *version < protocol::kOldestCompatibleClient) {
        m_metrics.countSession(QStringLiteral("rejected"));
        closeSocket(socket, QWebSocketProtocol::CloseCodePolicyViolated,
                    QStringLiteral("Tessera %1 is older than this coordinator speaks to (%2 or newer: the "
                                   "session protocol changed); update Tessera")
                        .arg((*node)->clientVersion.left(32), protocol::kOldestCompatibleClient.toString()));
        return false;
    }
    return true;
}

void SessionApi::open(QWebSocket* socket, const SessionRecord& session, qint64 now) {
    const QString& nodeId = session.nodeId;
    // Before the node is marked online: closing the old session marks it offline.
    replaceSessions(nodeId, socket);
    if (Status s = NodeRegistry(m_db).setState(nodeId, NodeState::Online, now); !s)
        qWarning("coordinator: marking node %s online failed: %s", qPrintable(nodeId), s.message().c_str());
    if (Result<bool> s = SessionStore(m_db).heartbeat(session.tokenHash, now); !s)
        qWarning("coordinator: recording a heartbeat failed: %s", s.message().c_str());
    m_live.insert(socket, Live{.tokenHash = session.tokenHash,
                               .nodeId = nodeId,
                               .lastHeartbeatMs = now,
                               .messageAllowance = m_settings.messageBurst,
                               .allowanceAtMs = now,
                               .binaryAllowance = m_settings.binaryBurst,
                               .binaryAllowanceAtMs = now});
    m_newest.insert(nodeId, socket);
    m_metrics.countSession(QStringLiteral("opened"));
    publishCount();

    connect(socket, &QWebSocket::textFrameReceived, this, [this, socket](const QString& frame, bool last) {
        onFrame(socket, utf8Bytes(frame), false, last);
    });
    connect(
        socket, &QWebSocket::binaryFrameReceived, this,
        [this, socket](const QByteArray& frame, bool last) { onFrame(socket, frame.size(), true, last); });
    connect(socket, &QWebSocket::textMessageReceived, this,
            [this, socket](const QString& message) { onText(socket, message); });
    connect(socket, &QWebSocket::binaryMessageReceived, this,
            [this, socket](const QByteArray& message) { onBinary(socket, message); });
    connect(socket, &QWebSocket::disconnected, this, [this, socket] { drop(socket); });
    if (m_listener != nullptr)
        m_listener->sessionOpened(nodeId);
}

void SessionApi::replaceSessions(const QString& nodeId, const QWebSocket* except) {
    QList<QWebSocket*> older;
    for (auto it = m_live.cbegin(); it != m_live.cend(); ++it)
        if (it.key() != except && it->nodeId == nodeId)
            older << it.key();
    for (QWebSocket* old : older) {
        m_metrics.countSession(QStringLiteral("replaced"));
        drop(old);
        closeSocket(old, QWebSocketProtocol::CloseCodePolicyViolated,
                    QStringLiteral("replaced by a newer session of this node (one session per node)"));
    }
}

void SessionApi::onFrame(QWebSocket* socket, qint64 bytes, bool binary, bool last) {
    const auto live = m_live.find(socket);
    if (live == m_live.end())
        return;
    qint64& sofar = binary ? live->binaryBytes : live->textBytes;
    sofar += bytes;
    const qint64 limit = binary ? m_settings.maxBinaryBytes : m_settings.maxMessageBytes;
    if (sofar > limit) {
        m_metrics.countSession(QStringLiteral("too_big"));
        drop(socket);
        cutOff(socket, QWebSocketProtocol::CloseCodeTooMuchData,
               binary ? QStringLiteral("binary messages are limited to %1 bytes in this run").arg(limit)
                      : QStringLiteral("text messages are limited to %1 bytes").arg(limit));
        return;
    }
    // A message in one frame is delivered at once; only the frames of a longer one are held.
    if (last && sofar == bytes)
        return;
    if (m_budget != nullptr) {
        if (!m_budget->take(bytes)) {
            m_metrics.countSession(QStringLiteral("over_budget"));
            drop(socket);
            cutOff(socket, QWebSocketProtocol::CloseCodeBadOperation,
                   QStringLiteral("the coordinator is receiving as much as it can hold at once; "
                                  "reconnect shortly"));
            return;
        }
        live->budgetHeld += bytes;
    }
}

void SessionApi::messageDone(QWebSocket* socket) {
    const auto live = m_live.find(socket);
    if (live == m_live.end())
        return;
    live->textBytes = 0;
    live->binaryBytes = 0;
    if (m_budget != nullptr)
        m_budget->give(std::exchange(live->budgetHeld, 0));
}

bool SessionApi::allowMessage(Live& live, qint64 nowMs) const {
    return spendToken(live.messageAllowance, live.allowanceAtMs, nowMs, m_settings.messagesPerSecond,
                      m_settings.messageBurst);
}

bool SessionApi::allowBinary(Live& live, qint64 nowMs) const {
    return spendToken(live.binaryAllowance, live.binaryAllowanceAtMs, nowMs, m_settings.binaryPerSecond,
                      m_settings.binaryBurst);
}

void SessionApi::onBinary(QWebSocket* socket, const QByteArray& bytes) {
    messageDone(socket);
    const auto live = m_live.find(socket);
    if (live == m_live.end())
        return;
    if (!allowBinary(*live, nowMs())) {
        m_metrics.countSession(QStringLiteral("rate_limited"));
        drop(socket);
        closeSocket(
            socket, QWebSocketProtocol::CloseCodePolicyViolated,
            QStringLiteral("more than %1 binary messages per second").arg(m_settings.binaryPerSecond));
        return;
    }
    if (m_listener == nullptr) {
        replyError(socket,
                   QStringLiteral("this coordinator runs no data plane: binary messages are not understood"));
        return;
    }
    const QString nodeId = live->nodeId; // the listener may close the session
    // Decoded once, here: the listener keeps views into its bytes.
    Result<protocol::TaskMessage> decoded = protocol::decodeTaskMessage(bytes);
    Result<protocol::SessionMessage> header =
        decoded ? protocol::parseSessionMessage(decoded->header, protocol::Direction::ToCoordinator,
                                                protocol::Transport::Binary)
                : decoded.error();
    if (!header) {
        qWarning("trainer: node %s sent a malformed binary message: %s", qPrintable(nodeId.left(12)),
                 header.message().c_str());
        sendText(nodeId, protocol::ErrorNotice{QStringLiteral("malformed binary message: %1")
                                                   .arg(QString::fromStdString(header.message()))
                                                   .left(protocol::kMaxReasonChars)});
        return;
    }
    // Parsed as a message to the coordinator, it is one.
    if (std::optional<protocol::ToCoordinatorMessage> received =
            protocol::receivedAs<protocol::ToCoordinatorMessage>(std::move(*header)))
        m_listener->sessionReceived(nodeId, *received, &*decoded);
}

bool SessionApi::sendText(const QString& nodeId, const protocol::SessionMessage& message) {
    QWebSocket* socket = m_newest.value(nodeId);
    if (socket == nullptr || !m_live.contains(socket))
        return false;
    reply(socket, message);
    return true;
}

bool SessionApi::sendBinary(const QString& nodeId, const QByteArray& message) {
    QWebSocket* socket = m_newest.value(nodeId);
    if (socket == nullptr || !m_live.contains(socket))
        return false;
    return socket->sendBinaryMessage(message) == message.size();
}

void SessionApi::onText(QWebSocket* socket, const QString& text) {
    messageDone(socket);
    const auto live = m_live.find(socket);
    if (live == m_live.end())
        return;
    const qint64 now = nowMs();
    if (text.size() > m_settings.maxMessageBytes) {
        m_metrics.countSession(QStringLiteral("too_big"));
        drop(socket);
        closeSocket(socket, QWebSocketProtocol::CloseCodeTooMuchData,
                    QStringLiteral("text messages are limited to %1 bytes").arg(m_settings.maxMessageBytes));
        return;
    }
    Result<protocol::SessionMessage> message =
        protocol::parseSessionText(text, protocol::Direction::ToCoordinator, m_settings.maxMessageBytes);
    const bool heartbeat = message && std::holds_alternative<protocol::Heartbeat>(*message);
    const bool isDataPlane = message && !heartbeat && m_listener != nullptr;
    // Data-plane messages follow the work the coordinator hands out (a step_done per step), so
    // they share the binary messages' allowance; the rest (heartbeats, anything refused) get the
    // small one.
    if (!(isDataPlane ? allowBinary(*live, now) : allowMessage(*live, now))) {
        m_metrics.countSession(QStringLiteral("rate_limited"));
        drop(socket);
        closeSocket(socket, QWebSocketProtocol::CloseCodePolicyViolated,
                    QStringLiteral("more than %1 messages per second").arg(m_settings.messagesPerSecond));
        return;
    }
    if (!message) {
        replyError(socket, QString::fromStdString(message.message()));
        return;
    }
    // Every message the node may send counts as a sign of life.
    live->lastHeartbeatMs = now;
    live->heartbeatUnsaved = true;
    if (heartbeat) {
        reply(socket, protocol::HeartbeatAck{now});
        return;
    }
    if (m_listener == nullptr) {
        replyError(socket, QStringLiteral("this coordinator runs no data plane"));
        return;
    }
    const QString nodeId = live->nodeId; // the listener may close the session
    // Parsed as a message to the coordinator, it is one.
    if (std::optional<protocol::ToCoordinatorMessage> received =
            protocol::receivedAs<protocol::ToCoordinatorMessage>(std::move(*message)))
        m_listener->sessionReceived(nodeId, *received, nullptr);
}

bool SessionApi::nodeHasOtherSession(const QString& nodeId, const QWebSocket* except) const {
    for (auto it = m_live.cbegin(); it != m_live.cend(); ++it)
        if (it.key() != except && it->nodeId == nodeId)
            return true;
    return false;
}

void SessionApi::drop(QWebSocket* socket) {
    const auto live = m_live.find(socket);
    if (live == m_live.end())
        return;
    const QString nodeId = live->nodeId;
    if (m_budget != nullptr)
        m_budget->give(live->budgetHeld);
    m_live.erase(live);
    publishCount();
    if (m_newest.value(nodeId) == socket) {
        m_newest.remove(nodeId);
        for (auto it = m_live.cbegin(); it != m_live.cend(); ++it)
            if (it->nodeId == nodeId)
                m_newest.insert(nodeId, it.key());
    }
    if (nodeHasOtherSession(nodeId, socket))
        return;
    if (m_listener != nullptr)
        m_listener->sessionClosed(nodeId);
    if (Status s = NodeRegistry(m_db).setState(nodeId, NodeState::Offline, nowMs()); !s)
        qWarning("coordinator: marking node %s offline failed: %s", qPrintable(nodeId), s.message().c_str());
}

void SessionApi::flushHeartbeats() {
    QList<QWebSocket*> heard;
    QStringList tokens, nodes;
    for (auto it = m_live.begin(); it != m_live.end(); ++it) {
        if (std::exchange(it->heartbeatUnsaved, false)) {
            heard << it.key();
            tokens << it->tokenHash;
            nodes << it->nodeId;
        }
    }
    if (heard.isEmpty())
        return;
    // All recorded at the flush's time: last_seen needs no finer grain than the flush interval.
    const qint64 now = nowMs();
    QStringList ended;
    const Status written = m_db.writeTransaction([&]() -> Status {
        Result<QStringList> invalid = SessionStore(m_db).heartbeatMany(tokens, now);
        if (!invalid)
            return invalid.error();
        ended = *invalid;
        return NodeRegistry(m_db).touchMany(nodes, now);
    });
    if (!written) {
        // Kept in memory: the next flush tries again, and the sockets stay open meanwhile.
        qWarning("coordinator: recording %lld heartbeats failed: %s", qlonglong(heard.size()),
                 written.message().c_str());
        for (QWebSocket* socket : heard)
            if (auto it = m_live.find(socket); it != m_live.end())
                it->heartbeatUnsaved = true;
        return;
    }
    if (ended.isEmpty())
        return;
    // Revoked or expired while connected: the token no longer admits this node. A node admitted
    // again holds a newer session (not always open yet: a heartbeat can come first): say so.
    const QSet<QString> endedSet(ended.cbegin(), ended.cend());
    for (QWebSocket* socket : heard) {
        const auto it = m_live.find(socket);
        if (it == m_live.end() || !endedSet.contains(it->tokenHash))
            continue;
        const Result<bool> readmitted = SessionStore(m_db).hasOtherValid(it->nodeId, it->tokenHash, now);
        const bool replaced = readmitted && *readmitted;
        if (replaced)
            m_metrics.countSession(QStringLiteral("replaced"));
        drop(socket);
        closeSocket(socket, QWebSocketProtocol::CloseCodePolicyViolated,
                    replaced
                        ? QStringLiteral("replaced by a newer admission of this node (one session per node)")
                        : QStringLiteral("the session was revoked or expired; admit again for a new one"));
    }
}

void SessionApi::sweep() {
    // First, so that the stale-node query below sees every heartbeat heard until now.
    flushHeartbeats();
    const qint64 now = nowMs();
    const qint64 cutoff = now - m_settings.heartbeatTimeout.count();
    // Silent sockets are closed and their nodes marked offline at once: a vanished peer never
    // answers the close frame.
    QList<QWebSocket*> stale;
    for (auto it = m_live.cbegin(); it != m_live.cend(); ++it)
        if (it->lastHeartbeatMs < cutoff)
            stale << it.key();
    for (QWebSocket* socket : stale) {
        m_metrics.countSession(QStringLiteral("timed_out"));
        drop(socket);
        closeSocket(socket, QWebSocketProtocol::CloseCodeGoingAway,
                    QStringLiteral("no heartbeat for %1 ms").arg(m_settings.heartbeatTimeout.count()));
    }
    // Nodes admitted but never connected (or left online by a previous process) go offline too.
    // A node with a live socket here is not among them: its heartbeats keep last_seen recent,
    // and a silent socket was closed above.
    if (Result<int> n = NodeRegistry(m_db).markStaleOffline(cutoff); !n)
        qWarning("coordinator: marking stale nodes offline failed: %s", n.message().c_str());
}

void SessionApi::closeAll(const QString& reason) {
    m_sweepTimer.stop();
    m_flushTimer.stop();
    flushHeartbeats();
    const QList<QWebSocket*> sockets = m_live.keys();
    for (QWebSocket* socket : sockets) {
        m_closing << socket;
        drop(socket);
        closeSocket(socket, QWebSocketProtocol::CloseCodeGoingAway, reason);
    }
}

void SessionApi::closeNode(const QString& nodeId, const QString& reason) {
    if (Result<int> revoked = SessionStore(m_db).revokeNode(nodeId); !revoked)
        qWarning("coordinator: revoking node %s's sessions failed: %s", qPrintable(nodeId.left(12)),
                 revoked.message().c_str());
    QList<QWebSocket*> sockets;
    for (auto it = m_live.cbegin(); it != m_live.cend(); ++it)
        if (it->nodeId == nodeId)
            sockets << it.key();
    for (QWebSocket* socket : sockets) {
        drop(socket);
        closeSocket(socket, QWebSocketProtocol::CloseCodePolicyViolated, reason.left(120));
    }
}

bool SessionApi::closing() const {
    return std::any_of(m_closing.cbegin(), m_closing.cend(), [](const QPointer<QWebSocket>& s) {
        return s && s->state() != QAbstractSocket::UnconnectedState;
    });
}

void SessionApi::publishCount() {
    m_metrics.setSessionsConnected(m_live.size());
}

} // namespace tessera::coordinator
