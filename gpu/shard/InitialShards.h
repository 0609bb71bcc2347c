// SPDX-License-Identifier: Apache-2.0
#pragma once
// InitialShards: a new run's seeded weights for every stage, written as stage shards. Torch-free
// header, so the coordinator (core/) can create a run without seeing torch.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/ShardManifest.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::gpu {

// "stage-S-vV.safetensors": the file name a stage's shard of one version has on the coordinator.
std::string stageShardFileName(std::int64_t stage, std::int64_t version);

// Builds each stage's model on the CPU in turn (one in memory at a time), writes its shard to
// dir/stageShardFileName(stage, version) at step 0 and returns the manifests (unsigned), one
// per stage in stage order. `dir` is created when missing.
Result<std::vector<ShardManifest>> writeInitialShards(const ModelConfig& config,
                                                      const std::filesystem::path& dir, std::int64_t version);

} // namespace tessera::gpu
