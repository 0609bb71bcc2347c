// SPDX-License-Identifier: Apache-2.0
#include "SmallFilesystem.h"

#include <QDir>
#include <QFile>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace tessera::test {

namespace {

constexpr char kUnshared[] = "TESSERA_TEST_UNSHARED";

QString fillerPath(const QString& dir) {
    return dir + QStringLiteral("/.filler");
}

} // namespace

SmallFilesystem::SmallFilesystem()
    : m_path(m_dir.filePath(QStringLiteral("fs"))) {}

SmallFilesystem::~SmallFilesystem() {
    if (m_mounted)
        ::umount2(QFile::encodeName(m_path).constData(), MNT_DETACH);
}

void SmallFilesystem::reexecUnsharedIfNeeded(int argc, char** argv) {
    if (::geteuid() == 0 || qEnvironmentVariableIsSet(kUnshared))
        return;
    ::setenv(kUnshared, "1", 1);
    std::vector<char*> args{const_cast<char*>("unshare"), const_cast<char*>("--user"),
                            const_cast<char*>("--map-root-user"), const_cast<char*>("--mount")};
    for (int i = 0; i < argc; ++i)
        args.push_back(argv[i]);
    args.push_back(nullptr);
    ::execvp("unshare", args.data());
    // exec failed: carry on; mount() will say why it cannot mount.
}

Status SmallFilesystem::mount(qint64 bytes) {
    if (!m_dir.isValid() || !QDir().mkpath(m_path))
        return makeError("cannot create a temporary directory to mount a small filesystem on");
    const QByteArray options = "size=" + QByteArray::number(bytes) + ",mode=0755";
    if (::mount("tmpfs", QFile::encodeName(m_path).constData(), "tmpfs", 0, options.constData()) != 0)
        return makeError(std::string("cannot mount a tmpfs for the disk-full test (") + std::strerror(errno) +
                         "): run the test as root, or where `unshare --user --map-root-user --mount` "
                         "is allowed (user namespaces enabled)");
    m_mounted = true;
    return {};
}

Status SmallFilesystem::resize(qint64 bytes) {
    const QByteArray options = "size=" + QByteArray::number(bytes);
    if (::mount("tmpfs", QFile::encodeName(m_path).constData(), "tmpfs", MS_REMOUNT, options.constData()) !=
        0)
        return makeError(std::string("cannot resize the tmpfs: ") + std::strerror(errno));
    return {};
}

qint64 SmallFilesystem::freeBytes() const {
    struct statvfs st {};
    if (::statvfs(QFile::encodeName(m_path).constData(), &st) != 0)
        return -1;
    return qint64(st.f_bavail) * qint64(st.f_frsize);
}

Result<qint64> SmallFilesystem::fill() {
    const int fd =
        ::open(QFile::encodeName(fillerPath(m_path)).constData(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0)
        return makeError(std::string("cannot create the filler: ") + std::strerror(errno));
    const std::vector<char> block(64 * 1024, 'f');
    qint64 taken = 0;
    for (;;) {
        const ssize_t n = ::write(fd, block.data(), block.size());
        if (n > 0) {
            taken += n;
            continue;
        }
        const int error = n < 0 ? errno : ENOSPC;
        if (error == EINTR)
            continue;
        if (error != ENOSPC) {
            ::close(fd);
            return makeError(std::string("filling the disk: ") + std::strerror(error));
        }
        // Smaller writes take what a whole block no longer fits in.
        char byte = 'f';
        while (::write(fd, &byte, 1) == 1)
            ++taken;
        break;
    }
    ::close(fd);
    return taken;
}

void SmallFilesystem::unfill() {
    QFile::remove(fillerPath(m_path));
}

} // namespace tessera::test
