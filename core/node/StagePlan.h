// SPDX-License-Identifier: Apache-2.0
#pragma once
// StagePlan: the node's own memory plan for the stage the coordinator gave it (gpu::planStageMemory,
// the arithmetic admission used), made from what the node claimed about its device before anything
// is downloaded. A stage that does not fit — a coordinator planning for more microbatches than the
// node's memory holds, or one that assigns carelessly — is refused in words; one that fits is laid out
// as planned (activations kept or recomputed, how many graphs at most).

#include "base/Result.h"
#include "model/MemoryPlan.h"

#include <QJsonObject>

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

} // namespace tessera::node
