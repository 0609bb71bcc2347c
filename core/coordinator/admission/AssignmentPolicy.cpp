// SPDX-License-Identifier: Apache-2.0
#include "coordinator/admission/AssignmentPolicy.h"

#include <cmath>
#include <limits>

namespace tessera::coordinator {

AssignmentPolicy::AssignmentPolicy(gpu::ModelConfig config, AssignmentSettings settings)
    : m_config(std::move(config))
    , m_settings(settings) {}

gpu::MemoryPlan AssignmentPolicy::plan(int stage, const NodeCapacity& node) const {
    gpu::MemoryPlanRequest request;
    request.deviceBytes = node.memoryBytes;
    request.gpu = node.gpu;
    request.compute = node.compute;
    request.batch = m_settings.batch;
    request.seqLen = m_settings.seqLen;
    request.microbatchesInFlight = m_settings.microbatchesInFlight;
    request.memoryFraction = m_settings.memoryFraction;
    return gpu::planStageMemory(m_config, stage, request);
}

qint64 AssignmentPolicy::stageRequirement(int stage, gpu::Dtype compute) const {
    // With no memory at all nothing fits, and the plan is the most frugal layout's need.
    return plan(stage, NodeCapacity{0, false, compute}).deviceBytes;
}

qint64 AssignmentPolicy::usableBytes(qint64 memoryBytes) const {
    return static_cast<qint64>(std::floor(double(memoryBytes) * m_settings.memoryFraction));
}

Assignment AssignmentPolicy::choose(const std::vector<StageLoad>& loads, const NodeCapacity& node) const {
    const qint64 usable = usableBytes(node.memoryBytes);
    int totalNodes = 0;
    for (const StageLoad& l : loads)
        totalNodes += l.nodes;

    std::optional<int> best;
    bool bestShort = false; // below minReplicas
    double bestScore = std::numeric_limits<double>::infinity();
    qint64 bestRequirement = 0;
    qint64 smallest = std::numeric_limits<qint64>::max();
    bool anyFits = false;
    for (int s = 0; s < m_config.stages; ++s) {
        const gpu::MemoryPlan p = plan(s, node);
        smallest = std::min(smallest, stageRequirement(s, node.compute));
        if (!p.fits)
            continue;
        anyFits = true;
        const StageLoad load = s < int(loads.size()) ? loads[std::size_t(s)] : StageLoad{};
        if (m_settings.maxNodesPerStage > 0 && load.nodes >= m_settings.maxNodesPerStage)
            continue;
        const double score = load.gflops / double(m_config.stageParameterCount(s));
        const bool isShort = load.nodes < m_settings.minReplicas;
        // Strict: a tie keeps the lower stage.
        if (!best || (isShort && !bestShort) || (isShort == bestShort && score < bestScore)) {
            best = s;
            bestShort = isShort;
            bestScore = score;
            bestRequirement = p.deviceBytes;
        }
    }

    // A node that fits nowhere is told so for good, rather than waitlisted for nothing.
    if (!anyFits) {
        const double fraction = m_settings.memoryFraction * 100;
        std::string reason = "needs " + formatBytes(smallest) + " for the smallest stage of model '" +
                             m_config.name + "' in " + std::string(gpu::dtypeName(node.compute)) + " (" +
                             gpu::describe(gpu::builtLayouts().back()) + "), " +
                             (node.gpu ? "this GPU" : "this computer") + " has " +
                             formatBytes(node.memoryBytes) + " (" + formatBytes(usable) + " usable at " +
                             std::to_string(int(fraction)) + "%)";
        return DoesNotFit{smallest, std::move(reason)};
    }
    const qint64 retry = std::max<qint64>(1, m_settings.waitlistRetryAfter.count());
    if (m_settings.maxNodesTotal > 0 && totalNodes >= m_settings.maxNodesTotal)
        return SwarmFull{retry, "the swarm is full (" + std::to_string(totalNodes) + " nodes)"};
    if (!best)
        return SwarmFull{retry, "every stage this node fits is full (" +
                                    std::to_string(m_settings.maxNodesPerStage) + " nodes each)"};
    return StageChosen{*best, bestRequirement};
}

} // namespace tessera::coordinator
