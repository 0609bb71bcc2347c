// SPDX-License-Identifier: Apache-2.0
#include "common/KeyFile.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#ifdef Q_OS_UNIX
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#else
#include <QSaveFile>
#endif

namespace tessera {

namespace {

constexpr qint64 kMaxKeyFileBytes = 64 * 1024;

std::string str(const QString& s) {
    return s.toStdString();
}

#ifdef Q_OS_UNIX

std::string errnoText() {
    return std::strerror(errno);
}

// Closes the descriptor and removes the temporary file unless the write got through.
class TempFile final {
public:
    explicit TempFile(QByteArray pathTemplate)
        : m_path(std::move(pathTemplate)) {
        // mkstemp creates the file O_EXCL with mode 0600 (less under a strict umask), so the
        // secret is never readable by others, not even for an instant.
        m_fd = mkstemp(m_path.data());
    }
    ~TempFile() {
        if (m_fd >= 0)
            ::close(m_fd);
        if (!m_kept && m_fd != -1)
            ::unlink(m_path.constData());
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    int fd() const { return m_fd; }
    const char* path() const { return m_path.constData(); }
    void keep() { m_kept = true; }

private:
    QByteArray m_path;
    int m_fd = -1;
    bool m_kept = false;
};

bool writeAll(int fd, const QByteArray& data) {
    const char* p = data.constData();
    qsizetype left = data.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, static_cast<std::size_t>(left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        left -= n;
    }
    return true;
}

// The rename is only durable once the directory entry is on disk.
void syncDirectory(const QByteArray& dir) {
    const int fd = ::open(dir.constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

#endif

} // namespace

Status KeyFile::writeNew(const QString& path, const QByteArray& secret) {
    return write(path, secret, false);
}

Status KeyFile::replace(const QString& path, const QByteArray& secret) {
    return write(path, secret, true);
}

Status KeyFile::write(const QString& path, const QByteArray& secret, bool overwrite) {
    const QFileInfo info(path);
    const QString dir = info.absolutePath();
    if (!QDir().mkpath(dir))
        return makeError("cannot create directory " + str(dir));
    if (!overwrite && (info.exists() || info.isSymLink()))
        return makeError(str(path) + " already exists");

#ifdef Q_OS_UNIX
    const QByteArray target = QFile::encodeName(info.absoluteFilePath());
    TempFile temp(target + ".tmp-XXXXXX");
    if (temp.fd() < 0)
        return makeError("cannot create a file in " + str(dir) + ": " + errnoText());
    // Exactly 0600 even when the umask removed the owner's bits.
    if (::fchmod(temp.fd(), S_IRUSR | S_IWUSR) != 0 || !writeAll(temp.fd(), secret) ||
        ::fsync(temp.fd()) != 0)
        return makeError("cannot write " + str(path) + ": " + errnoText());
    if (overwrite) {
        if (::rename(temp.path(), target.constData()) != 0)
            return makeError("cannot write " + str(path) + ": " + errnoText());
        temp.keep();
        syncDirectory(QFile::encodeName(dir));
        return {};
    }
    // link() fails when the target exists, where rename() would replace it: the first key
    // written wins.
    if (::link(temp.path(), target.constData()) != 0) {
        if (errno == EEXIST)
            return makeError(str(path) + " already exists");
        // Filesystems without hard links (FAT, some FUSE mounts): fall back to rename.
        if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP)
            return makeError("cannot create " + str(path) + ": " + errnoText());
        if (::rename(temp.path(), target.constData()) != 0)
            return makeError("cannot create " + str(path) + ": " + errnoText());
        temp.keep();
    }
    syncDirectory(QFile::encodeName(dir));
    return {};
#else
    // Elsewhere (Windows) the new file inherits the ACL of the user's private data directory.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) ||
        !file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner) ||
        file.write(secret) != secret.size() || !file.flush() || !file.commit())
        return makeError("cannot write " + str(path) + ": " + str(file.errorString()));
    return {};
#endif
}

Result<QByteArray> KeyFile::read(const QString& path, Readers readers) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return makeError("cannot open key file " + str(path) + ": " + str(file.errorString()));
#ifdef Q_OS_UNIX
    // Checked on the open descriptor, so the file cannot be swapped between check and read.
    struct stat st {};
    if (::fstat(file.handle(), &st) != 0)
        return makeError("cannot stat key file " + str(path) + ": " + errnoText());
    if (!S_ISREG(st.st_mode))
        return makeError("key file " + str(path) + " is not a regular file");
    const mode_t forbidden = readers == Readers::OwnerOnly ? mode_t(S_IRWXG | S_IRWXO) : mode_t(S_IRWXO);
    if ((st.st_mode & forbidden) != 0) {
        const QString mode = QString::number(st.st_mode & 07777, 8).rightJustified(4, u'0');
        return makeError("key file " + str(path) + " has mode " + str(mode) +
                         ": other users can access the private key; fix it with: chmod 600 " + str(path));
    }
#else
    Q_UNUSED(readers);
#endif
    if (file.size() > kMaxKeyFileBytes)
        return makeError("key file " + str(path) + " is larger than 64 KiB");
    return file.read(kMaxKeyFileBytes + 1);
}

} // namespace tessera
