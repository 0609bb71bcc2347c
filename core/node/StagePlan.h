// SPDX-License-Identifier: Apache-2.0
#pragma once
// StagePlan: the node's own memory plan for the stage the coordinator gave it (gpu::planStageMemory,
// the arithmetic admission used), made from what the node claimed about its device before anything
// is downloaded. A stage that does not fit — a coordinator planning for more microbatches than the
// node's memory holds, or one that assigns carelessly — is refused in words; one that fits is laid out
// as planned (activations kept or recomputed, how many graphs at most).

#include "base/Result.h"
#include "model/MemoryPlan.h"
#include "protocol/Refusal.h"

#include <QJsonObject>
#include <QString>

#include <optional>

namespace tessera::gpu {
struct StageEngineOptions;
}

namespace tessera::node {

struct StagePlanInput {
    QJsonObject modelConfig; // the coordinator's /v1/info model
    int stage = -1;
    QJsonObject hardware; // {device, name, memory_bytes}: what admission signed
    QJsonObject bench;    // {gflops, dtype, ...}
    int microbatchesInFlight = 4;
};

// An error (malformed input) or the plan; plan.fits false carries plan.reason.
Result<gpu::MemoryPlan> planAssignedStage(const StagePlanInput& input);

// What the node does with a stage just granted: the plan that fits (logged), or the refusal it stops on.
struct GrantedStage {
    std::optional<gpu::MemoryPlan> plan;
    protocol::RefusalKind refusal = protocol::RefusalKind::Other;
    QString why;
};
GrantedStage planGrantedStage(const StagePlanInput& input);

// The plan's layout into the engine's options; a plan that did not fit (none made) changes nothing.
void applyPlan(const gpu::MemoryPlan& plan, gpu::StageEngineOptions& engine);

} // namespace tessera::node
