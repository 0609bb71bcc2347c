// SPDX-License-Identifier: Apache-2.0
#include "manager/SingleInstance.h"

#include "common/PrivateSocketDir.h"

#include <QCryptographicHash>
#include <QDir>
#include <QEventLoop>
#include <QLocalServer>
#include <QLocalSocket>
#include <QRegularExpression>
#include <QTimer>

namespace tessera::manager {

namespace {

// Long enough for a busy first instance to accept and answer, short enough not to delay a lone start.
constexpr int kAnswerMs = 2000;
// A client line longer than this is not ours.
constexpr qint64 kMaxLine = 256;
constexpr char kShow[] = "show";
constexpr char kShown[] = "shown";

} // namespace

SingleInstance::SingleInstance(QString name, QObject* parent)
    : QObject(parent)
    , m_name(std::move(name)) {}

SingleInstance::~SingleInstance() {
    // Closing removes the socket file, so the next instance finds no stale one.
    if (m_server)
        m_server->close();
}

SingleInstance::Claim SingleInstance::blocked(QString path, std::optional<unsigned> owner, QString detail) {
    m_blocker = Blocker{std::move(path), owner, std::move(detail)};
    qWarning("tessera: %s", qPrintable(m_blocker.detail));
    return Claim::Blocked;
}

SingleInstance::Claim SingleInstance::claim() {
    if (m_server)
        return Claim::First;
    if (m_path.isEmpty()) {
        if (QDir::isAbsolutePath(m_name)) {
            m_path = m_name;
        } else {
            Result<QString> dir = PrivateSocketDir::path();
            if (!dir)
                return blocked(PrivateSocketDir::candidate(), std::nullopt,
                               QString::fromStdString(dir.message()));
            m_path = *dir + u'/' + m_name;
        }
    }
    if (const Asked asked = askToShow(); asked != Asked::NoOne)
        return asked == Asked::Shown ? Claim::Second : Claim::Blocked;
    auto* server = new QLocalServer(this);
    // Only this user may connect (the socket file is 0700), so no one else can raise our window.
    server->setSocketOptions(QLocalServer::UserAccessOption);
    if (!server->listen(m_path)) {
        // A socket file that no one answers on is left by a crash. But another instance may have
        // started listening since we tried: ask again before removing it.
        if (const Asked asked = askToShow(); asked != Asked::NoOne) {
            delete server;
            return asked == Asked::Shown ? Claim::Second : Claim::Blocked;
        }
        QLocalServer::removeServer(m_path);
        if (!server->listen(m_path)) {
            const QString error = server->errorString();
            delete server;
            return blocked(m_path, std::nullopt,
                           QStringLiteral("cannot listen on the local socket %1 (%2)").arg(m_path, error));
        }
    }
    m_server = server;
    serve();
    return Claim::First;
}

void SingleInstance::serve() {
    connect(m_server, &QLocalServer::newConnection, this, [this] {
        while (QLocalSocket* client = m_server->nextPendingConnection()) {
            connect(client, &QLocalSocket::disconnected, client, &QObject::deleteLater);
            const auto readLines = [this, client] {
                while (client->canReadLine()) {
                    if (client->readLine(kMaxLine).trimmed() == kShow) {
                        // The answer tells the second instance that it reached this app.
                        client->write(QByteArray(kShown) + '\n');
                        client->flush(); // out before whatever showing the window does (or exits)
                        Q_EMIT showRequested();
                    }
                }
                if (client->bytesAvailable() > kMaxLine)
                    client->abort();
            };
            connect(client, &QLocalSocket::readyRead, this, readLines);
            readLines(); // what arrived before the connection was made
        }
    });
}

SingleInstance::Asked SingleInstance::askToShow() {
    QLocalSocket socket;
    // A local event loop rather than blocking waits: an instance in this same thread (tests) answers.
    QEventLoop loop;
    QTimer timeout;
    timeout.setSingleShot(true);
    connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
    connect(&socket, &QLocalSocket::connected, &loop, &QEventLoop::quit);
    connect(&socket, &QLocalSocket::errorOccurred, &loop, &QEventLoop::quit);
    connect(&socket, &QLocalSocket::readyRead, &loop, [&] {
        if (socket.canReadLine())
            loop.quit();
    });
    socket.connectToServer(m_path);
    timeout.start(kAnswerMs);
    if (socket.state() == QLocalSocket::ConnectingState)
        loop.exec();
    if (socket.state() != QLocalSocket::ConnectedState)
        return Asked::NoOne;
    // Whoever listens gets nothing from us unless it runs as this user.
    const std::optional<unsigned> peer = PrivateSocketDir::peerUid(socket.socketDescriptor());
    if (peer && *peer != PrivateSocketDir::ownUid()) {
        socket.abort();
        blocked(
            m_path, peer,
            QStringLiteral("the local socket %1 is held by another user (uid %2)").arg(m_path).arg(*peer));
        return Asked::Blocked;
    }
    socket.write(QByteArray(kShow) + '\n');
    if (!socket.canReadLine() && timeout.isActive())
        loop.exec();
    const bool answered = socket.canReadLine() && socket.readLine(kMaxLine).trimmed() == kShown;
    socket.abort();
    if (!answered) {
        blocked(m_path, peer,
                QStringLiteral("a program that is not Tessera listens on the local socket %1 and did not "
                               "answer")
                    .arg(m_path));
        return Asked::Blocked;
    }
    return Asked::Shown;
}

QString defaultInstanceName() {
    // The user's name when it is plain ASCII (it names a file in the private socket folder);
    // otherwise a hash of the home folder, as much the user's own.
    QString user = qEnvironmentVariable("USER");
    if (user.isEmpty())
        user = qEnvironmentVariable("USERNAME");
    static const QRegularExpression plain(
        QRegularExpression::anchoredPattern(QStringLiteral("[A-Za-z0-9._-]{1,64}")));
    if (plain.match(user).hasMatch())
        return QStringLiteral("tessera-") + user;
    const QByteArray home = QDir::homePath().toUtf8();
    return QStringLiteral("tessera-") +
           QString::fromLatin1(QCryptographicHash::hash(home, QCryptographicHash::Sha256).toHex().left(16));
}

} // namespace tessera::manager
