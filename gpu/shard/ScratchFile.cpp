// SPDX-License-Identifier: Apache-2.0
#include "shard/ScratchFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace tessera::gpu {

Status ScratchFile::openRead(const std::filesystem::path& path) {
    m_path = path;
    m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    return m_fd >= 0 ? Status{} : makeError("cannot open " + path.string() + ": " + std::strerror(errno));
}

Status ScratchFile::create(const std::filesystem::path& path, std::uint64_t bytes) {
    m_path = path;
    m_remove = true;
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (m_fd < 0)
        return makeError("cannot create " + path.string() + ": " + std::strerror(errno));
    if (::ftruncate(m_fd, static_cast<off_t>(bytes)) != 0)
        return makeError("cannot size " + path.string() + ": " + std::strerror(errno));
    return {};
}

Status ScratchFile::read(std::uint64_t offset, void* out, std::size_t size) const {
    auto* p = static_cast<char*>(out);
    while (size > 0) {
        const ssize_t n = ::pread(m_fd, p, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return makeError("reading " + m_path.string() + ": " +
                             (n == 0 ? std::string("the file ends early") : std::strerror(errno)));
        p += n, offset += std::uint64_t(n), size -= std::size_t(n);
    }
    return {};
}

Status ScratchFile::write(std::uint64_t offset, const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::pwrite(m_fd, p, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return makeError("writing " + m_path.string() + ": " + std::strerror(errno));
        p += n, offset += std::uint64_t(n), size -= std::size_t(n);
    }
    return {};
}

void ScratchFile::close() {
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
    if (m_remove) {
        std::error_code ignored;
        std::filesystem::remove(m_path, ignored);
        m_remove = false;
    }
}

} // namespace tessera::gpu
