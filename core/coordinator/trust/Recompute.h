// SPDX-License-Identifier: Apache-2.0
#pragma once
// Recompute: one task of a stage run again on given weights, for an audit — nothing kept, and the
// engine's weights and gradients as they were (StageEngine::isolated).

#include "base/Result.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

namespace tessera::gpu {
class StageEngine;
struct ModelConfig;
}

namespace tessera::coordinator {

struct Recomputed {
    std::vector<std::uint8_t> frame; // forward: the activation frame; backward: the gradient frame
    double loss = std::numeric_limits<double>::quiet_NaN(); // the last stage's
};

// A CPU engine of the stage, nothing kept (what audits and bisections recompute on); null, said in the
// log, when it cannot be made.
std::unique_ptr<gpu::StageEngine> cpuStageEngine(const gpu::ModelConfig& config, int stage);

// Forward: the activation frame for the next stage. Backward (a middle stage's, or the last stage's
// forward-backward with its targets): the gradient frame for the stage before, and the loss.
Result<Recomputed> recompute(gpu::StageEngine& engine, bool backward, std::span<const std::uint8_t> input,
                             std::span<const std::uint8_t> targets, std::span<const std::uint8_t> gradOutput);

} // namespace tessera::coordinator
