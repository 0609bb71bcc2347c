// SPDX-License-Identifier: Apache-2.0
#pragma once
// The parameter shapes of a middle pipeline stage, for benchmarks that need a stage's layout without
// building its model (bench_gradient_exchange, bench_sparta).

#include "base/ModelConfig.h"

#include <cstdint>
#include <vector>

namespace tessera::gpu {

// A middle stage's parameters in the order StageModel holds them: per decoder block the two norm
// gains, wq, wk, wv, wo and the SwiGLU's w1, w2, w3 (weights are [out, in]).
inline std::vector<std::vector<std::int64_t>> middleStageShapes(const ModelConfig& c, int blocks) {
    const std::int64_t d = c.dModel, kv = std::int64_t(c.nKvHeads) * (c.dModel / c.nHeads), h = c.ffnHidden;
    std::vector<std::vector<std::int64_t>> shapes;
    for (int b = 0; b < blocks; ++b)
        for (const auto& s : std::vector<std::vector<std::int64_t>>{
                 {d}, {d, d}, {kv, d}, {kv, d}, {d, d}, {d}, {h, d}, {d, h}, {h, d}})
            shapes.push_back(s);
    return shapes;
}

// The blocks a middle stage holds: the layers spread over the stages, rounded up.
inline int middleStageBlocks(const ModelConfig& c) {
    return (c.nLayers + c.stages - 1) / c.stages;
}

} // namespace tessera::gpu
