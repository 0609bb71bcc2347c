// SPDX-License-Identifier: Apache-2.0
#pragma once
// AssignmentPolicy: which pipeline stage a newly admitted node should serve, if any.

#include "base/Dtype.h"
#include "base/ModelConfig.h"
#include "model/MemoryPlan.h"

#include <QtGlobal>

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera::coordinator {

struct AssignmentSettings {
    // The training shape a node's memory must hold (see gpu::planStageMemory: the node lays the
    // stage out in the first of the engine's layouts that fits, and plans with the same arithmetic).
    int batch = 1;
    int seqLen = 0; // 0: the model's maxSeqLen
    int microbatchesInFlight = 4;
    // Share of a device's memory a stage may plan on: the rest is the allocator's fragmentation,
    // the CUDA context and what the estimate does not count.
    double memoryFraction = 0.9;
    // 0 means no limit. When every stage a node fits is full, or the swarm is, it waits.
    int maxNodesPerStage = 0;
    int maxNodesTotal = 0;
    // Stages with fewer nodes than this are filled first, before throughput decides: a stage of one
    // replica is lost with its node, and at a stage the coordinator cannot recompute (8b) a second
    // replica is the only check of the first one's answers — a lone node that answers fast (because it
    // skips the work) would otherwise keep newcomers off its stage and itself unchecked. 0: off.
    int minReplicas = 2;
    std::chrono::seconds waitlistRetryAfter{300};
};

// The current workers of one stage.
struct StageLoad {
    int nodes = 0;
    double gflops = 0; // their benchmarked throughput, summed
};

// What the policy knows about the candidate.
struct NodeCapacity {
    qint64 memoryBytes = 0;
    bool gpu = false; // for the wording only: "this GPU" or "this computer"
    gpu::Dtype compute = gpu::Dtype::F32;
};

struct StageChosen {
    int stage = 0;
    qint64 requiredBytes = 0;
};
// Permanent for this hardware: no stage fits, whatever the load.
struct DoesNotFit {
    qint64 smallestRequirementBytes = 0;
    std::string reason; // "needs 21.3 GiB, this GPU has 12.0 GiB ..."
};
// Temporary: a stage fits, but there is no room now.
struct SwarmFull {
    qint64 retryAfterSeconds = 0;
    std::string reason;
};
using Assignment = std::variant<StageChosen, DoesNotFit, SwarmFull>;

class AssignmentPolicy final {
public:
    AssignmentPolicy(gpu::ModelConfig config, AssignmentSettings settings);

    const gpu::ModelConfig& config() const { return m_config; }
    const AssignmentSettings& settings() const { return m_settings; }

    // How the node would lay `stage` out (the node makes the same plan before it downloads).
    gpu::MemoryPlan plan(int stage, const NodeCapacity& node) const;
    // Bytes a node computing in `compute` needs at least to train `stage` under the settings: its
    // most frugal layout.
    qint64 stageRequirement(int stage, gpu::Dtype compute) const;
    qint64 usableBytes(qint64 memoryBytes) const;

    // loads: one entry per stage (missing entries count as empty stages). Among the stages the
    // node fits and that have room — those below minReplicas nodes first — the one with the least
    // throughput per stage parameter wins, so compute flows to the stage that is slowest for its
    // size; ties go to the lowest.
    Assignment choose(const std::vector<StageLoad>& loads, const NodeCapacity& node) const;

private:
    gpu::ModelConfig m_config;
    AssignmentSettings m_settings;
};

using gpu::formatBytes;

} // namespace tessera::coordinator
