// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardManifest: what a node checks a downloaded stage shard against: the safetensors file's
// size and SHA-256, whole and per chunk (so a bad download is retried from the first bad chunk).

#include "base/Result.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::gpu {

struct ShardManifest {
    static constexpr std::string_view kFormat = "tessera-shard-manifest/1";
    static constexpr std::uint64_t kDefaultChunkSize = 64ull << 20;
    static constexpr std::uint64_t kMaxChunkSize = 1ull << 30;
    static constexpr std::int64_t kMaxStage = 1023;

    std::string modelConfigHash; // ModelConfig::hash(): 64 lowercase hex characters
    std::int64_t stage = 0;
    std::int64_t version = 0;
    std::int64_t step = 0;
    std::string file; // a bare file name ("stage-0.safetensors"), never a path
    std::uint64_t fileSize = 0;
    std::string sha256; // of the whole file
    std::uint64_t chunkSize = kDefaultChunkSize;
    std::vector<std::string> chunks;      // SHA-256 of each chunkSize bytes, the last one shorter
    std::optional<std::string> signature; // the coordinator's, opaque here

    // Hashes the file at path in one streamed pass.
    static Result<ShardManifest> build(const std::filesystem::path& path, std::string_view modelConfigHash,
                                       std::int64_t stage, std::int64_t version, std::int64_t step,
                                       std::uint64_t chunkSize = kDefaultChunkSize);
    // Fixed key order; "signature" only when present.
    std::string toJson() const;
    // Strict: every field present, typed and in range, no unknown fields.
    static Result<ShardManifest> fromJson(std::string_view text);

    // Every field's rule (fromJson and build apply it too).
    Status validate() const;
    // Size, then each chunk in order (the error names the first bad one), then the whole hash.
    // `afterChunk` (optional) is told the bytes verified so far after each good chunk; an error it
    // returns ends the verification with that error (a progress bar, a stop).
    Status verifyFile(const std::filesystem::path& path,
                      const std::function<Status(std::uint64_t bytesVerified)>& afterChunk = {}) const;
};

} // namespace tessera::gpu
