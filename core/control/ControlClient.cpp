// SPDX-License-Identifier: Apache-2.0
#include "control/ControlClient.h"

#include "common/PrivateSocketDir.h"
#include "control/ControlEndpoint.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QLocalSocket>

#include <algorithm>

namespace tessera::node {

namespace {

constexpr qint64 kMaxMessageBytes = ControlEndpoint::kMaxMessageBytes;
constexpr qint64 kReadChunkBytes = 64 * 1024;

std::string str(const QString& s) {
    return QDir::toNativeSeparators(s).toStdString();
}

int remainingMs(const QDeadlineTimer& deadline) {
    return static_cast<int>(std::max<qint64>(0, deadline.remainingTime()));
}

// Reads one reply line, never holding more than a message and its newline.
Result<QByteArray> readLine(QLocalSocket& socket, const QDeadlineTimer& deadline, const std::string& node) {
    QByteArray line;
    for (;;) {
        const qsizetype newline = line.indexOf('\n');
        if (newline >= 0)
            return line.left(newline);
        if (line.size() > kMaxMessageBytes)
            return makeError(node + " sent a reply over 1 MiB");
        if (socket.bytesAvailable() > 0) {
            const qint64 room = kMaxMessageBytes + 1 - line.size();
            line += socket.read(std::min({socket.bytesAvailable(), room, kReadChunkBytes}));
            continue;
        }
        if (socket.waitForReadyRead(remainingMs(deadline)) || socket.bytesAvailable() > 0)
            continue;
        if (socket.state() != QLocalSocket::ConnectedState)
            return makeError(node + " closed the connection without answering");
        return makeError(node + " did not answer in time");
    }
}

} // namespace

Result<QJsonObject> ControlClient::call(const QString& dataDir, const protocol::ControlRequest& request,
                                        int timeoutMs) {
    const std::string command = protocol::controlCommandName(request.command).toStdString();
    const QDeadlineTimer deadline(timeoutMs);
    const ControlEndpoint endpoint(dataDir);
    const std::string node = "tessera-node on " + str(dataDir);
    Result<QByteArray> token = endpoint.readToken();
    if (!token)
        return token.error();
    // The token goes only to a socket this user owns (the temp-dir fallback is shared).
    if (Status socketFile = endpoint.checkSocketFile(); !socketFile)
        return socketFile.error();

    QLocalSocket socket;
    socket.setReadBufferSize(kReadChunkBytes);
    socket.connectToServer(endpoint.socketPath());
    if (!socket.waitForConnected(remainingMs(deadline))) {
        switch (socket.error()) {
        case QLocalSocket::ServerNotFoundError:
        case QLocalSocket::ConnectionRefusedError:
            return makeError("no tessera-node is running on " + str(dataDir));
        case QLocalSocket::SocketTimeoutError:
            return makeError(node + " did not accept the connection in time");
        default:
            return makeError("cannot connect to " + node + ": " + socket.errorString().toStdString());
        }
    }

    // The file's owner was checked; the listener's own uid is what receives the token.
    if (const std::optional<unsigned> peer = PrivateSocketDir::peerUid(socket.socketDescriptor());
        peer && *peer != PrivateSocketDir::ownUid())
        return makeError("the control socket of " + node + " is held by another user (uid " +
                         std::to_string(*peer) + "); refusing to send it the token");

    const QByteArray requestLine = protocol::requestLine(request, *token);
    if (requestLine.size() > kMaxMessageBytes)
        return makeError("the " + command + " request is over 1 MiB");
    socket.write(requestLine);
    while (socket.bytesToWrite() > 0) {
        if (!socket.waitForBytesWritten(remainingMs(deadline)))
            return makeError("cannot send to " + node + ": " + socket.errorString().toStdString());
    }

    Result<QByteArray> line = readLine(socket, deadline, node);
    if (!line)
        return line.error();
    const QJsonDocument document = QJsonDocument::fromJson(*line);
    if (!document.isObject())
        return makeError(node + " sent a malformed reply");
    QJsonObject reply = document.object();
    if (!reply.value(u"ok").toBool()) {
        const QString error = reply.value(u"error").toString();
        return makeError(error.isEmpty() ? node + " refused " + command : error.toStdString());
    }
    return reply;
}

} // namespace tessera::node
