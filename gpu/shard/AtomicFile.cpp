// SPDX-License-Identifier: Apache-2.0
#include "shard/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace tessera::gpu {

Result<AtomicFile> AtomicFile::create(const std::filesystem::path& path) {
    std::filesystem::path tmp = path.string() + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return makeError("cannot write " + path.string() + ": " + std::strerror(errno));
    return AtomicFile(path, std::move(tmp), fd);
}

AtomicFile::AtomicFile(std::filesystem::path path, std::filesystem::path tmp, int fd)
    : m_path(std::move(path))
    , m_tmp(std::move(tmp))
    , m_fd(fd) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : m_path(std::move(other.m_path))
    , m_tmp(std::move(other.m_tmp))
    , m_fd(std::exchange(other.m_fd, -1)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
    if (this != &other) {
        discard();
        m_path = std::move(other.m_path);
        m_tmp = std::move(other.m_tmp);
        m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
}

AtomicFile::~AtomicFile() {
    discard();
}

void AtomicFile::discard() {
    if (m_fd < 0)
        return;
    ::close(m_fd);
    m_fd = -1;
    std::error_code ignored;
    std::filesystem::remove(m_tmp, ignored);
}

Error AtomicFile::fail(const std::string& why) {
    discard();
    return makeError("cannot write " + m_path.string() + ": " + why);
}

Status AtomicFile::append(std::span<const std::byte> data) {
    if (m_fd < 0)
        return makeError("cannot write " + m_path.string() + ": the file is already closed");
    const auto* p = data.data();
    std::size_t size = data.size();
    while (size > 0) {
        const ssize_t n = ::write(m_fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(std::strerror(errno));
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return {};
}

Status AtomicFile::append(std::string_view data) {
    return append(std::as_bytes(std::span(data.data(), data.size())));
}

Status AtomicFile::commit() {
    if (m_fd < 0)
        return makeError("cannot write " + m_path.string() + ": the file is already closed");
    // fsync before rename: otherwise a crash can leave the new name on empty or partial data.
    if (::fsync(m_fd) != 0)
        return fail(std::strerror(errno));
    const int fd = std::exchange(m_fd, -1);
    if (::close(fd) != 0) {
        const std::string why = std::strerror(errno);
        std::error_code ignored;
        std::filesystem::remove(m_tmp, ignored);
        return makeError("cannot write " + m_path.string() + ": " + why);
    }
    if (::rename(m_tmp.c_str(), m_path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::error_code ignored;
        std::filesystem::remove(m_tmp, ignored);
        return makeError("cannot write " + m_path.string() + ": " + why);
    }
    // Make the rename itself durable.
    const std::filesystem::path dir =
        m_path.has_parent_path() ? m_path.parent_path() : std::filesystem::path(".");
    if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return {};
}

} // namespace tessera::gpu
