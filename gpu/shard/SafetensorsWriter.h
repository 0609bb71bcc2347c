// SPDX-License-Identifier: Apache-2.0
#pragma once
// SafetensorsWriter: writes tensors as one safetensors file, atomically (a reader never sees half
// a file: it is written to PATH.tmp, fsynced and renamed). Or only lays the file out: declared
// tensors have a shape and no data, and the caller streams their bytes after fileHead() itself.

#include "base/Dtype.h"
#include "base/Result.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::gpu {

class SafetensorsWriter {
public:
    // Keeps a reference to data (no copy: a stage shard can be gigabytes), which must stay alive
    // until write() returns and be exactly shape's element count × the dtype's size. Fails on an
    // empty, duplicate or non-UTF-8 name, or an unknown dtype (any safetensors dtype is accepted).
    Status add(std::string_view name, Dtype dtype, std::vector<std::int64_t> shape,
               std::span<const std::byte> data);
    Status add(std::string_view name, std::string_view dtype, std::vector<std::int64_t> shape,
               std::span<const std::byte> data);
    // Takes ownership instead: what a temporary buffer binds to, so it cannot dangle.
    Status add(std::string_view name, Dtype dtype, std::vector<std::int64_t> shape,
               std::vector<std::byte>&& data);
    Status add(std::string_view name, std::string_view dtype, std::vector<std::int64_t> shape,
               std::vector<std::byte>&& data);
    // A tensor without its data, which the caller writes itself: the same checks as add(). write()
    // refuses a writer that holds one; fileHead() lays them out like the others.
    Status declare(std::string_view name, Dtype dtype, std::vector<std::int64_t> shape);
    // Sets (or replaces) one "__metadata__" entry.
    Status setMetadata(std::string_view key, std::string_view value);

    // The header (padded with spaces to a multiple of 8 bytes, so the data is 8-byte aligned),
    // then the tensors in insertion order.
    std::string header() const;
    // What a safetensors file holds before its first tensor byte: the header's length (8 bytes,
    // little-endian), then header(). Fails when the header is over kSafetensorsMaxHeader.
    Result<std::string> fileHead() const;
    // The bytes of all tensors, what follows fileHead() in the file.
    std::uint64_t dataSize() const;
    Status write(const std::filesystem::path& path) const;

private:
    struct Entry {
        std::string name;
        std::string dtype;
        std::vector<std::int64_t> shape;
        std::span<const std::byte> data;
        std::shared_ptr<const std::vector<std::byte>> owned; // set when add() took ownership
        std::uint64_t size = 0;                              // data.size(), or a declared tensor's
        bool declared = false;                               // no data: the caller streams it
    };
    // The byte size of a tensor that may be added: checks its name, dtype and shape.
    Result<std::uint64_t> checkEntry(std::string_view name, std::string_view dtype,
                                     const std::vector<std::int64_t>& shape) const;
    std::vector<Entry> m_entries;
    std::vector<std::pair<std::string, std::string>> m_metadata;
};

} // namespace tessera::gpu
