#include "manager/SingleInstance.h"

#include <QCryptographicHash>
#include <QDir>
#include <QLocalServer>
#include <QLocalSocket>
#include <QRegularExpression>

namespace tessera::manager {

namespace {

// Long enough for a busy first instance to accept, short enough not to delay a lone start.
constexpr int kConnectMs = 1000;
// A client line longer than this is not ours.
constexpr qint64 kMaxLine = 256;

} // namespace

SingleInstance::SingleInstance(QString name, QObject* parent)
    : QObject(parent)
    , m_name(std::move(name)) {}

SingleInstance::~SingleInstance() {
    // Closing removes the socket file, so the next instance finds no stale one.
    if (m_server)
        m_server->close();
}

bool SingleInstance::claim() {
    if (m_server)
        return true;
    if (askToShow())
        return false;
    auto* server = new QLocalServer(this);
    // Only this user may connect (the socket file is 0700), so no one else can raise our window.
    server->setSocketOptions(QLocalServer::UserAccessOption);
    if (!server->listen(m_name)) {
        // A socket file that no one answers on is left by a crash. But another instance may have
        // started listening since we tried: ask again before removing it.
        if (askToShow()) {
            delete server;
            return false;
        }
        QLocalServer::removeServer(m_name);
        if (!server->listen(m_name)) {
            // Running twice is better than not running at all.
            qWarning("tessera: cannot listen on the local socket %s (%s); a second instance will not be "
                     "noticed",
                     qPrintable(m_name), qPrintable(server->errorString()));
            delete server;
            return true;
        }
    }
    m_server = server;
    connect(server, &QLocalServer::newConnection, this, [this] {
        while (QLocalSocket* client = m_server->nextPendingConnection()) {
            connect(client, &QLocalSocket::disconnected, client, &QObject::deleteLater);
            const auto readLines = [this, client] {
                while (client->canReadLine()) {
                    if (client->readLine(kMaxLine).trimmed() == "show")
                        Q_EMIT showRequested();
                }
                if (client->bytesAvailable() > kMaxLine)
                    client->abort();
            };
            connect(client, &QLocalSocket::readyRead, this, readLines);
            readLines(); // what arrived before the connection was made
        }
    });
    return true;
}

bool SingleInstance::askToShow() const {
    QLocalSocket socket;
    socket.connectToServer(m_name);
    if (!socket.waitForConnected(kConnectMs))
        return false;
    socket.write("show\n");
    socket.waitForBytesWritten(kConnectMs);
    socket.disconnectFromServer();
    if (socket.state() != QLocalSocket::UnconnectedState)
        socket.waitForDisconnected(kConnectMs);
    return true;
}

QString defaultInstanceName() {
    // The user's name when it is plain ASCII (it names a file in the temporary folder);
    // otherwise a hash of the home folder, as much the user's own.
    QString user = qEnvironmentVariable("USER");
    if (user.isEmpty())
        user = qEnvironmentVariable("USERNAME");
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9._-]{1,64}$"));
    if (plain.match(user).hasMatch())
        return QStringLiteral("tessera-") + user;
    const QByteArray home = QDir::homePath().toUtf8();
    return QStringLiteral("tessera-") +
           QString::fromLatin1(QCryptographicHash::hash(home, QCryptographicHash::Sha256).toHex().left(16));
}

} // namespace tessera::manager
