// SPDX-License-Identifier: Apache-2.0
#pragma once
// SafetensorsFile: a strict reader of the safetensors format (the only way shard bytes from the
// network become tensors); every rule of the format is checked before any tensor is read.
//
// Layout: u64 little-endian header length N, N bytes of UTF-8 JSON header, then the data buffer.

#include "base/Dtype.h"
#include "base/Result.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::gpu {

struct TensorInfo {
    std::string name;
    std::string dtype; // safetensors spelling: "F32", "BF16", "I64", ...
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0; // byte offsets into the data buffer, [begin, end)
    std::uint64_t end = 0;

    std::uint64_t byteSize() const { return end - begin; }
};

inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;

// Bytes per element of a safetensors dtype, or nullopt when unknown (or sub-byte, like F4).
std::optional<std::size_t> safetensorsDtypeSize(std::string_view dtype);
std::string_view safetensorsDtypeName(Dtype dtype); // "F32", "BF16", "F16", "I8"
std::optional<Dtype> dtypeFromSafetensors(std::string_view name);

class SafetensorsFile {
public:
    // Validates the header against the file's size; reads no tensor data.
    static Result<SafetensorsFile> open(const std::filesystem::path& path);
    // Validates a whole file held in memory (copies its data buffer).
    static Result<SafetensorsFile> parse(std::span<const std::byte> bytes);

    // In data-offset order (the order our writer wrote them in).
    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const TensorInfo* find(std::string_view name) const;
    const std::vector<std::pair<std::string, std::string>>& metadata() const { return m_metadata; }
    std::uint64_t headerLength() const { return m_headerLength; }
    std::uint64_t fileSize() const { return m_dataStart + m_dataSize; }

    Result<std::vector<std::byte>> read(const TensorInfo& tensor) const;
    // Into a caller buffer of exactly tensor.byteSize() bytes.
    Status read(const TensorInfo& tensor, std::span<std::byte> out) const;
    // The tensor's bytes [offset, offset + out.size()) (a large tensor a piece at a time).
    Status readRange(const TensorInfo& tensor, std::uint64_t offset, std::span<std::byte> out) const;

private:
    static Result<SafetensorsFile> fromHeader(std::string_view header, std::uint64_t headerLength,
                                              std::uint64_t fileSize);

    std::vector<TensorInfo> m_tensors;
    std::map<std::string, std::size_t, std::less<>> m_index;
    std::vector<std::pair<std::string, std::string>> m_metadata;
    std::uint64_t m_headerLength = 0;
    std::uint64_t m_dataStart = 0;
    std::uint64_t m_dataSize = 0;
    std::shared_ptr<const int> m_fd;                      // open(): the file, read with pread
    std::shared_ptr<const std::vector<std::byte>> m_data; // parse(): the data buffer
};

} // namespace tessera::gpu
