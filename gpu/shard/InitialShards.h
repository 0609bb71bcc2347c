// SPDX-License-Identifier: Apache-2.0
#pragma once
// InitialShards: a new run's seeded weights for every stage, written as stage shards. Torch-free
// header, so the coordinator (core/) can create a run without seeing torch.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/ShardManifest.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::gpu {

// "stage-S-vV.safetensors": the file name a stage's shard of one version has on the coordinator.
std::string stageShardFileName(std::int64_t stage, std::int64_t version);

// How far writeInitialShards has come, read from another thread (the coordinator's status), and
// its stop: set `cancel` and it returns an error soon, leaving no file behind but *.tmp ones.
struct InitialShardProgress {
    std::atomic<std::int64_t> bytesWritten{0};
    std::atomic<std::int64_t> bytesTotal{0}; // set before the first byte is written
    std::atomic<bool> cancel{false};
};

// Writes each stage's seeded step-0 shard to dir/stageShardFileName(stage, version) and returns
// the manifests (unsigned), one per stage in stage order. `dir` is created when missing. The
// weights are made on every core.
Result<std::vector<ShardManifest>> writeInitialShards(const ModelConfig& config,
                                                      const std::filesystem::path& dir, std::int64_t version,
                                                      InitialShardProgress* progress = nullptr);

// One stage's seeded step-0 shard, as writeInitialShards writes it (benchmarks of one stage), its
// weights made on `threads` threads (0: every core).
Result<ShardManifest> writeInitialShard(const ModelConfig& config, int stage,
                                        const std::filesystem::path& dir, std::int64_t version,
                                        int threads = 0);

} // namespace tessera::gpu
