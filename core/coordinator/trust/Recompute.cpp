// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/Recompute.h"

#include "engine/StageEngine.h"

#include <QtGlobal>

namespace tessera::coordinator {

Result<Recomputed> recompute(gpu::StageEngine& engine, bool backward, std::span<const std::uint8_t> input,
                             std::span<const std::uint8_t> targets,
                             std::span<const std::uint8_t> gradOutput) {
    // Its own microbatch ids, below any the router gives out.
    static std::int64_t next = 0;
    const std::int64_t id = -(++next);
    Recomputed out;
    Status run = engine.isolated([&]() -> Status {
        if (!backward) {
            Result<gpu::StageForwardResult> f = engine.forward(id, input, targets);
            engine.drop(id);
            if (!f)
                return f.error();
            out.frame = std::move(f->output);
            out.loss = f->loss;
            return {};
        }
        Result<gpu::StageBackwardResult> b = engine.backward(id, gradOutput, input, targets);
        engine.drop(id);
        if (!b)
            return b.error();
        out.frame = std::move(b->gradInput);
        out.loss = b->loss;
        return {};
    });
    if (!run)
        return run.error();
    return out;
}

std::unique_ptr<gpu::StageEngine> cpuStageEngine(const gpu::ModelConfig& config, int stage) {
    gpu::StageEngineOptions options;
    options.config = config;
    options.stage = stage;
    options.device = "cpu";
    options.keepActivations = false;
    Result<std::unique_ptr<gpu::StageEngine>> made = gpu::StageEngine::create(options);
    if (!made) {
        qWarning("trust: no engine for stage %d: %s", stage, made.message().c_str());
        return nullptr;
    }
    return std::move(*made);
}

} // namespace tessera::coordinator
