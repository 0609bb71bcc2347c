// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageShard: a stage's weights to and from one safetensors file plus its manifest. Loading
// checks the manifest (when given), then that the file belongs to this model and stage and
// holds exactly the stage's tensors with their shapes, before a single weight changes.
// Internal to gpu/ (takes a StageModel).

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/ShardManifest.h"

#include <filesystem>

namespace tessera::gpu {

class SafetensorsWriter;
class StageModel;

// The metadata a stage shard carries (the model's config and its hash, the stage, the step), which
// loadStageShard checks. Also what the initial shards streamed without a StageModel carry.
Status setStageShardMetadata(SafetensorsWriter& writer, const ModelConfig& config, std::int64_t stage,
                             std::int64_t step);

// Writes the stage's parameters (fp32) atomically to `file` and returns its manifest.
Result<ShardManifest> writeStageShard(const StageModel& model, const std::filesystem::path& file,
                                      std::int64_t version, std::int64_t step,
                                      std::uint64_t chunkSize = ShardManifest::kDefaultChunkSize);

// Loads `file` into the model. With a manifest, the file is verified against it first (size,
// every chunk, whole-file SHA-256) and the manifest must name this model and stage. Each tensor
// comes through a host buffer of at most `chunkBytes` (an 8b head is 2.1 GB), not whole.
inline constexpr std::uint64_t kShardLoadChunkBytes = std::uint64_t{16} << 20;
Status loadStageShard(StageModel& model, const std::filesystem::path& file,
                      const ShardManifest* manifest = nullptr,
                      std::uint64_t chunkBytes = kShardLoadChunkBytes);

} // namespace tessera::gpu
