// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardHasher: a shard's whole-file and per-chunk SHA-256s taken from its bytes as they are written,
// so that its manifest needs no second pass over the file (ShardManifest::build reads it again).

#include "base/Result.h"
#include "base/Sha256.h"
#include "base/ShardManifest.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::gpu {

class ShardHasher {
public:
    // chunkSize as ShardManifest's: 1 to kMaxChunkSize (finish() fails otherwise).
    explicit ShardHasher(std::uint64_t chunkSize = ShardManifest::kDefaultChunkSize);

    // The file's next bytes. A large piece is hashed whole and by chunks on two threads: SHA-256
    // is sequential, so the two hashes are what a piece costs, not what it takes.
    void update(std::span<const std::byte> data);
    std::uint64_t size() const { return m_size; }

    // The manifest (unsigned) of a file named fileName holding the bytes fed so far; what
    // ShardManifest::build of that file returns. The hasher starts over afterwards.
    Result<ShardManifest> finish(std::string fileName, std::string_view modelConfigHash, std::int64_t stage,
                                 std::int64_t version, std::int64_t step);

private:
    void updateChunks(std::span<const std::byte> data);

    std::uint64_t m_chunkSize;
    Sha256 m_whole;
    Sha256 m_chunk;
    std::uint64_t m_inChunk = 0; // bytes of the current chunk hashed so far
    std::uint64_t m_size = 0;
    std::vector<std::string> m_chunks;
};

} // namespace tessera::gpu
