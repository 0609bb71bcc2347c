// SPDX-License-Identifier: Apache-2.0
#include "base/ShardHasher.h"

#include <algorithm>
#include <thread>

namespace tessera::gpu {

namespace {

// Below this a second thread costs more than it saves.
constexpr std::size_t kParallelBytes = 1 << 20;

} // namespace

ShardHasher::ShardHasher(std::uint64_t chunkSize)
    : m_chunkSize(chunkSize) {}

void ShardHasher::update(std::span<const std::byte> data) {
    m_size += data.size();
    if (data.size() < kParallelBytes || m_chunkSize < 1) {
        m_whole.update(data);
        updateChunks(data);
        return;
    }
    std::jthread chunks([&] { updateChunks(data); });
    m_whole.update(data);
}

void ShardHasher::updateChunks(std::span<const std::byte> data) {
    if (m_chunkSize < 1)
        return; // refused by finish()
    while (!data.empty()) {
        const std::size_t take =
            static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), m_chunkSize - m_inChunk));
        m_chunk.update(data.first(take));
        data = data.subspan(take);
        m_inChunk += take;
        if (m_inChunk == m_chunkSize) {
            m_chunks.push_back(Sha256::toHex(m_chunk.final()));
            m_inChunk = 0;
        }
    }
}

Result<ShardManifest> ShardHasher::finish(std::string fileName, std::string_view modelConfigHash,
                                          std::int64_t stage, std::int64_t version, std::int64_t step) {
    if (m_chunkSize < 1 || m_chunkSize > ShardManifest::kMaxChunkSize)
        return makeError("shard manifest: chunk size must be between 1 and " +
                         std::to_string(ShardManifest::kMaxChunkSize));
    if (m_inChunk > 0)
        m_chunks.push_back(Sha256::toHex(m_chunk.final()));
    ShardManifest m;
    m.modelConfigHash = modelConfigHash;
    m.stage = stage;
    m.version = version;
    m.step = step;
    m.file = std::move(fileName);
    m.fileSize = m_size;
    m.sha256 = Sha256::toHex(m_whole.final());
    m.chunkSize = m_chunkSize;
    m.chunks = std::move(m_chunks);
    m_chunks.clear();
    m_inChunk = 0;
    m_size = 0;
    if (Status s = m.validate(); !s)
        return makeError(s.message());
    return m;
}

} // namespace tessera::gpu
