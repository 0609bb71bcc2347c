// SPDX-License-Identifier: Apache-2.0
#pragma once
// ScratchFile: a file read and written at offsets (pread/pwrite), closed — and, when it was created
// as scratch, removed — when the object goes. What StageCheckpointFile keeps a stage's working
// weights and moments in.

#include "base/Result.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace tessera::gpu {

class ScratchFile {
public:
    ScratchFile() = default;
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;
    ~ScratchFile() { close(); }

    bool isOpen() const { return m_fd >= 0; }
    const std::filesystem::path& path() const { return m_path; }

    // An existing file, read only (never removed).
    Status openRead(const std::filesystem::path& path);
    // A new scratch file of `bytes` zero bytes (sparse: zeros cost no disk), removed when closed.
    Status create(const std::filesystem::path& path, std::uint64_t bytes);
    // Exactly `size` bytes at `offset`; a short file is an error.
    Status read(std::uint64_t offset, void* out, std::size_t size) const;
    Status write(std::uint64_t offset, const void* data, std::size_t size);
    void close();

private:
    int m_fd = -1;
    bool m_remove = false;
    std::filesystem::path m_path;
};

} // namespace tessera::gpu
