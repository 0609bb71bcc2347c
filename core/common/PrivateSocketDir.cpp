// SPDX-License-Identifier: Apache-2.0
#include "common/PrivateSocketDir.h"

#include <QDir>
#include <QFile>

#ifdef Q_OS_UNIX
#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace tessera {

namespace {

#ifdef Q_OS_UNIX

std::string str(const QString& s) {
    return QDir::toNativeSeparators(s).toStdString();
}

std::string modeText(mode_t mode) {
    return QString::number(mode & 07777, 8).rightJustified(4, u'0').toStdString();
}

// Ok when `dir` is a real directory (not a symlink) owned by this user with no access for others.
Status checkPrivate(const QString& dir) {
    struct stat st {};
    if (::lstat(QFile::encodeName(dir).constData(), &st) != 0)
        return makeError("cannot use " + str(dir) + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return makeError(str(dir) + " is not a directory; another program or user created it. Remove it, or "
                                    "set XDG_RUNTIME_DIR to a private directory");
    if (st.st_uid != ::geteuid())
        return makeError(str(dir) + " belongs to another user (uid " + std::to_string(st.st_uid) +
                         "), who created it first; tessera will not put its sockets there. Ask an "
                         "administrator to remove it, or set XDG_RUNTIME_DIR to a private directory");
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
        return makeError(str(dir) + " has mode " + modeText(st.st_mode) +
                         ": other users could take names in it. Run chmod 700 on it");
    return {};
}

#endif

} // namespace

QString PrivateSocketDir::candidate() {
#ifdef Q_OS_UNIX
    const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
    if (!runtime.isEmpty() && QDir::isAbsolutePath(runtime) && checkPrivate(runtime))
        return runtime + QStringLiteral("/tessera");
    return QDir::tempPath() + QStringLiteral("/tessera-") + QString::number(::geteuid());
#else
    return QDir::tempPath();
#endif
}

Result<QString> PrivateSocketDir::path() {
    const QString dir = candidate();
#ifdef Q_OS_UNIX
    // mkdir with 0700 creates it private in one step (the umask only removes bits); one that is
    // already there must be ours and private, whoever made it.
    if (::mkdir(QFile::encodeName(dir).constData(), 0700) != 0 && errno != EEXIST)
        return makeError("cannot create " + str(dir) + ": " + std::strerror(errno));
    if (Status s = checkPrivate(dir); !s)
        return s.error();
#endif
    return dir;
}

std::optional<unsigned> PrivateSocketDir::peerUid(qintptr socketDescriptor) {
#if defined(Q_OS_LINUX)
    struct ucred credentials {};
    socklen_t size = sizeof(credentials);
    if (::getsockopt(int(socketDescriptor), SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0)
        return std::nullopt;
    return unsigned(credentials.uid);
#elif defined(Q_OS_UNIX)
    uid_t uid = 0;
    gid_t gid = 0;
    if (::getpeereid(int(socketDescriptor), &uid, &gid) != 0)
        return std::nullopt;
    return unsigned(uid);
#else
    Q_UNUSED(socketDescriptor);
    return std::nullopt;
#endif
}

unsigned PrivateSocketDir::ownUid() {
#ifdef Q_OS_UNIX
    return unsigned(::geteuid());
#else
    return 0;
#endif
}

} // namespace tessera
