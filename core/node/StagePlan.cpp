// SPDX-License-Identifier: Apache-2.0
#include "node/StagePlan.h"

#include "engine/StageEngine.h"

#include <QJsonDocument>

#include <stdexcept>

namespace tessera::node {

Result<gpu::MemoryPlan> planAssignedStage(const StagePlanInput& input) {
    Result<gpu::ModelConfig> config = gpu::ModelConfig::fromJson(
        QJsonDocument(input.modelConfig).toJson(QJsonDocument::Compact).toStdString());
    if (!config)
        return makeError("the coordinator's model: " + config.message());
    if (input.stage < 0 || input.stage >= config->stages)
        return makeError("stage " + std::to_string(input.stage) + " is not a stage of model '" +
                         config->name + "'");
    const double memory = input.hardware.value(u"memory_bytes").toDouble(-1);
    const std::optional<gpu::Dtype> compute =
        gpu::parseDtype(input.bench.value(u"dtype").toString().toStdString());
    if (!(memory > 0) || !compute)
        return makeError("this node's own hardware claims lack its memory or compute dtype");
    gpu::MemoryPlanRequest request;
    request.deviceBytes = std::int64_t(memory);
    request.gpu = input.hardware.value(u"device").toString() != u"cpu";
    request.compute = *compute;
    request.microbatchesInFlight = input.microbatchesInFlight;
    try {
        return gpu::planStageMemory(*config, input.stage, request);
    } catch (const std::invalid_argument& e) {
        return makeError(std::string("planning the stage's memory: ") + e.what());
    }
}

GrantedStage planGrantedStage(const StagePlanInput& input) {
    Result<gpu::MemoryPlan> plan = planAssignedStage(input);
    if (!plan)
        return {std::nullopt, protocol::RefusalKind::Other, QString::fromStdString(plan.message())};
    if (!plan->fits)
        return {std::nullopt, protocol::RefusalKind::NoStageFits,
                QStringLiteral("the coordinator gave this node a stage it cannot hold: %1")
                    .arg(QString::fromStdString(plan->reason))};
    qInfo("node: stage %d planned: %s, %s of %s usable", input.stage, gpu::describe(plan->layout).c_str(),
          gpu::formatBytes(plan->deviceBytes).c_str(), gpu::formatBytes(plan->usableBytes).c_str());
    return {*plan, protocol::RefusalKind::Other, {}};
}

void applyPlan(const gpu::MemoryPlan& plan, gpu::StageEngineOptions& engine) {
    if (!plan.fits)
        return;
    engine.keepActivations = plan.layout.keepActivations;
    engine.recomputePerBlock = plan.layout.perBlock;
    if (plan.layout.keepActivations)
        engine.maxKept = plan.maxKept;
}

} // namespace tessera::node
