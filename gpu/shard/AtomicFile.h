// SPDX-License-Identifier: Apache-2.0
#pragma once
// AtomicFile: a file written front to back under PATH.tmp and put in place by commit() (fsynced,
// renamed, the rename made durable), so that a reader never sees half a file. Until commit()
// succeeds PATH is untouched; destroyed or failed before that, it removes PATH.tmp.
//
// States: open (append) → committed, or → discarded (a failed append or commit, discard(), the
// destructor). Only an open file takes bytes.

#include "base/Result.h"

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace tessera::gpu {

class AtomicFile {
public:
    // Creates (or truncates) PATH.tmp.
    static Result<AtomicFile> create(const std::filesystem::path& path);
    AtomicFile(AtomicFile&& other) noexcept;
    AtomicFile& operator=(AtomicFile&& other) noexcept;
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();

    // Errors say "cannot write PATH: why", and leave the file discarded.
    Status append(std::span<const std::byte> data);
    Status append(std::string_view data);
    Status commit();
    void discard();

    const std::filesystem::path& path() const { return m_path; }

private:
    AtomicFile(std::filesystem::path path, std::filesystem::path tmp, int fd);
    Error fail(const std::string& why);

    std::filesystem::path m_path;
    std::filesystem::path m_tmp;
    int m_fd = -1; // -1 once committed or discarded
};

} // namespace tessera::gpu
