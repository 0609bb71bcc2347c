// SPDX-License-Identifier: Apache-2.0
#include "control/ControlEndpoint.h"

#include "common/KeyFile.h"
#include "common/PrivateSocketDir.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>

#include <array>

#ifdef Q_OS_UNIX
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#else
#include <QSaveFile>
#endif

namespace tessera::node {

namespace {

std::string str(const QString& s) {
    return QDir::toNativeSeparators(s).toStdString();
}

bool isTokenText(const QByteArray& text) {
    if (text.size() != ControlEndpoint::kTokenHexChars)
        return false;
    for (char c : text) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

QByteArray randomToken() {
    std::array<quint32, ControlEndpoint::kTokenHexChars / 8> words{};
    QRandomGenerator::system()->fillRange(words.data(), words.size());
    return QByteArray(reinterpret_cast<const char*>(words.data()), sizeof(words)).toHex();
}

#ifdef Q_OS_UNIX

std::string errnoText() {
    return std::strerror(errno);
}

QString modeText(mode_t mode) {
    return QString::number(mode & 07777, 8).rightJustified(4, u'0');
}

#endif

} // namespace

ControlEndpoint::ControlEndpoint(const QString& dataDir)
    : m_dataDir(dataDir) {
    const QFileInfo info(dataDir);
    m_canonicalDir = info.canonicalFilePath();
    // A directory that does not exist yet has no canonical form; the server creates it first.
    if (m_canonicalDir.isEmpty())
        m_canonicalDir = QDir::cleanPath(info.absoluteFilePath());
}

QString ControlEndpoint::socketPath() const {
    const QString inDataDir = m_canonicalDir + QStringLiteral("/control.sock");
    if (QFile::encodeName(inDataDir).size() <= maxSocketPathBytes())
        return inDataDir;
    const QByteArray hash =
        QCryptographicHash::hash(QFile::encodeName(m_canonicalDir), QCryptographicHash::Sha256).toHex();
    // Not the shared temp dir itself: another local user could take the name there first.
    return PrivateSocketDir::candidate() + QStringLiteral("/tessera-node-") +
           QString::fromLatin1(hash.left(16)) + QStringLiteral(".sock");
}

qsizetype ControlEndpoint::maxSocketPathBytes() {
#ifdef Q_OS_UNIX
#ifdef Q_OS_LINUX
    constexpr qsizetype reserved = 2; // Qt 6 checks room for an abstract name's leading NUL too
#else
    constexpr qsizetype reserved = 1;
#endif
    return static_cast<qsizetype>(sizeof(sockaddr_un::sun_path)) - reserved;
#else
    return 255; // a named pipe: no sockaddr_un limit
#endif
}

QString ControlEndpoint::tokenPath() const {
    return m_canonicalDir + QStringLiteral("/control.token");
}

Result<QByteArray> ControlEndpoint::writeNewToken() const {
    const QByteArray token = randomToken();
    // 0600 from creation, fsynced, renamed in whole over the previous run's token.
    if (Status s = KeyFile::replace(tokenPath(), token); !s)
        return makeError("cannot write the control token: " + s.message());
    return token;
}

Result<QByteArray> ControlEndpoint::readToken() const {
    const QString path = tokenPath();
    QFile file(path);
    if (!file.exists())
        return makeError("no tessera-node is running on " + str(m_dataDir) + " (no control token)");
    if (!file.open(QIODevice::ReadOnly))
        return makeError("cannot read control token " + str(path) + ": " + file.errorString().toStdString());
#ifdef Q_OS_UNIX
    // Checked on the open descriptor, so the file cannot be swapped between check and read.
    struct stat st {};
    if (::fstat(file.handle(), &st) != 0)
        return makeError("cannot read control token " + str(path) + ": " + errnoText());
    if (!S_ISREG(st.st_mode))
        return makeError("control token " + str(path) + " is not a regular file");
    if (st.st_uid != ::geteuid())
        return makeError("control token " + str(path) + " belongs to another user; refusing to use it");
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
        return makeError("control token " + str(path) + " has mode " + modeText(st.st_mode).toStdString() +
                         ": other users could have read or replaced it; refusing to use it (restart "
                         "tessera-node to write a new one)");
#endif
    const QByteArray text = file.read(kTokenHexChars + 2).trimmed();
    if (!isTokenText(text))
        return makeError("control token " + str(path) +
                         " is malformed (restart tessera-node to write a new one)");
    return text;
}

void ControlEndpoint::removeToken(const QByteArray& token) const {
    QFile file(tokenPath());
    if (!file.open(QIODevice::ReadOnly))
        return;
    const bool ours = file.read(kTokenHexChars + 2).trimmed() == token;
    file.close();
    if (ours)
        file.remove();
}

Status ControlEndpoint::checkSocketFile() const {
#ifdef Q_OS_UNIX
    const QString path = socketPath();
    if (QFileInfo(path).absolutePath() != m_canonicalDir) {
        // The fallback directory: created private, or refused with who owns it.
        if (Result<QString> dir = PrivateSocketDir::path(); !dir)
            return makeError("cannot place the control socket for " + str(m_dataDir) + ": " + dir.message());
    }
    struct stat st {};
    if (::lstat(QFile::encodeName(path).constData(), &st) != 0)
        return {}; // nothing there yet
    if (!S_ISSOCK(st.st_mode))
        return makeError(str(path) + " is not a socket; remove it if no tessera-node uses it");
    if (st.st_uid != ::geteuid())
        return makeError("control socket " + str(path) + " belongs to another user; refusing to use it");
#endif
    return {};
}

} // namespace tessera::node
