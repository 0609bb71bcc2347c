// SPDX-License-Identifier: Apache-2.0
#pragma once
// ParameterSpec: one stage's parameters as StageModel holds them (name, shape, order) and how
// each starts, without building the stage. Torch-free: the coordinator sizes and streams a new
// run's shards (shard/InitialShards) from it, never holding a stage's weights in memory.

#include "base/ModelConfig.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::gpu {

struct ParameterSpec {
    enum class Init {
        Normal, // fillSeededNormal(seed, name, stddev): depends only on the run's seed and the name
        Ones,   // the norms' gains
    };

    std::string name; // global, as in the unsplit model ("blocks.5.attn.wq.weight")
    std::vector<std::int64_t> shape;
    Init init = Init::Normal;
    double stddev = 0; // Normal only

    std::int64_t numel() const;
    bool operator==(const ParameterSpec&) const = default;
};

// Llama's scales: unit-variance embedding coordinates, N(0, 0.02) linears, and the projections that
// write into the residual stream shrunk by 1/sqrt(2·layers) so the stream's variance does not grow
// with depth.
double initialStddev(std::string_view name, int nLayers);

// Exactly StageModel(config, stage).namedParameters()'s names and shapes, in its order (embedding,
// blocks in order, final norm, head). The config must be valid and stage in [0, stages).
std::vector<ParameterSpec> stageParameters(const ModelConfig& config, int stage);

} // namespace tessera::gpu
