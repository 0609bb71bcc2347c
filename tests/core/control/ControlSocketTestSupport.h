// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the control-socket tests share: a handler that records requests, raw request lines, a client speaking
// the protocol by hand, and a server on its own thread.
#include "common/Mailbox.h"
#include "control/ControlClient.h"
#include "control/ControlEndpoint.h"
#include "control/ControlServer.h"

#include <QCryptographicHash>
#include <QDir>
#include <QJsonDocument>
#include <QLocalSocket>
#include <QMutex>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include "TestSupport.h"

#include <cstring>
#include <memory>
#include <stdexcept>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace tessera;
using namespace tessera::node;
using test::fileMode;
using test::readFile;

namespace {

constexpr qsizetype kCap = ControlEndpoint::kMaxMessageBytes;

using protocol::ControlCommand;
using protocol::ControlRequest;

// What the handler was asked, from whichever thread the server runs on.
struct Calls {
    QMutex mutex;
    QList<ControlRequest> list;

    qsizetype size() {
        QMutexLocker lock(&mutex);
        return list.size();
    }
    ControlRequest last() {
        QMutexLocker lock(&mutex);
        return list.isEmpty() ? ControlRequest{} : list.last();
    }
};

// The request that makes the test handler refuse, and the one that makes it throw.
const ControlRequest kRefused{ControlCommand::SetLimit, false, 13};
const ControlRequest kThrows{ControlCommand::Pause, true};

// Answers like a node would; kRefused and kThrows steer the unhappy paths.
inline ControlServer::Handler handlerFor(std::shared_ptr<Calls> calls) {
    return [calls](const ControlRequest& request) -> QJsonObject {
        {
            QMutexLocker lock(&calls->mutex);
            calls->list.append(request);
        }
        if (request.command == kThrows.command && request.hard)
            throw std::runtime_error("engine exploded");
        if (request.command == kRefused.command && request.percent == kRefused.percent)
            return {{QStringLiteral("ok"), false},
                    {QStringLiteral("error"), QStringLiteral("limit must be positive")}};
        if (request.command == ControlCommand::Status)
            return {{QStringLiteral("state"), QStringLiteral("training")}, {QStringLiteral("stage"), 2}};
        return {{QStringLiteral("done"), protocol::controlCommandName(request.command)}};
    };
}

inline QByteArray requestLine(const QString& token, const QString& command,
                              const QJsonObject& arguments = {}) {
    QJsonObject request{{QStringLiteral("command"), command}, {QStringLiteral("arguments"), arguments}};
    if (!token.isNull())
        request.insert(QStringLiteral("token"), token);
    return QJsonDocument(request).toJson(QJsonDocument::Compact) + '\n';
}

inline QString tokenOf(const QString& dataDir) {
    return QString::fromLatin1(readFile(ControlEndpoint(dataDir).tokenPath()));
}

// A client speaking the protocol by hand, waiting with the event loop running so a server on
// the test's own thread answers it.
class RawClient final {
public:
    explicit RawClient(const QString& socketPath) {
        QObject::connect(&m_socket, &QLocalSocket::readyRead, [this] { m_received += m_socket.readAll(); });
        m_socket.connectToServer(socketPath);
    }

    bool connected() {
        return QTest::qWaitFor([this] { return m_socket.state() == QLocalSocket::ConnectedState; }, 5000);
    }
    void send(const QByteArray& bytes) { m_socket.write(bytes); }
    // The next reply line; an empty object when none came.
    QJsonObject reply() {
        if (!QTest::qWaitFor([this] { return m_received.contains('\n'); }, 10'000))
            return {};
        const qsizetype newline = m_received.indexOf('\n');
        const QByteArray line = m_received.left(newline);
        m_received.remove(0, newline + 1);
        return QJsonDocument::fromJson(line).object();
    }
    bool disconnected(int timeoutMs = 10'000) {
        return QTest::qWaitFor([this] { return m_socket.state() == QLocalSocket::UnconnectedState; },
                               timeoutMs);
    }
    bool stillConnected() {
        QTest::qWait(100);
        return m_socket.state() == QLocalSocket::ConnectedState;
    }
    void close() { m_socket.abort(); }

private:
    QLocalSocket m_socket;
    QByteArray m_received;
};

// A server on its own thread, for ControlClient::call, which blocks the calling thread.
class ServerThread final {
public:
    ServerThread(const QString& dataDir, ControlServer::Handler handler)
        : m_server(new ControlServer(dataDir, std::move(handler))) {
        m_server->moveToThread(&m_thread);
        m_box.moveToThread(&m_thread);
        m_thread.start();
    }
    ~ServerThread() {
        m_box.call([this] { delete m_server; });
        m_thread.quit();
        m_thread.wait();
    }
    ServerThread(const ServerThread&) = delete;
    ServerThread& operator=(const ServerThread&) = delete;

    Status listen() {
        Status status;
        m_box.call([&] { status = m_server->listen(); });
        return status;
    }

private:
    QThread m_thread;
    // Calls into the server's thread, visibly to ThreadSanitizer (make tsan).
    tessera::Mailbox m_box;
    ControlServer* m_server;
};

// A socket file nobody listens on, as a node killed with SIGKILL leaves behind.
inline bool makeDanglingSocket(const QString& path) {
    const QByteArray name = QFile::encodeName(path);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (name.size() >= static_cast<qsizetype>(sizeof(address.sun_path)))
        return false;
    std::memcpy(address.sun_path, name.constData(), static_cast<size_t>(name.size()));
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    return bound;
}

inline bool isOwnerOnlySocket(const QString& path) {
    struct stat st {};
    return ::lstat(QFile::encodeName(path).constData(), &st) == 0 && S_ISSOCK(st.st_mode) &&
           st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
}

} // namespace
