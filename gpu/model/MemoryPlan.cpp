// SPDX-License-Identifier: Apache-2.0
#include "model/MemoryPlan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessera::gpu {

namespace {

constexpr std::int64_t kMostKept = 64; // StageEngineOptions::maxKept's default

} // namespace

std::vector<MemoryLayout> builtLayouts() {
    return {{true, false, false}, {false, false, false}, {false, true, false}};
}

std::vector<MemoryLayout> allLayouts() {
    std::vector<MemoryLayout> all = builtLayouts();
    all.push_back({false, true, true});
    return all;
}

std::string describe(const MemoryLayout& layout) {
    std::string s = layout.keepActivations ? "activations kept"
                    : layout.perBlock      ? "activations recomputed a block at a time"
                                           : "activations recomputed";
    if (layout.optimizerOnHost)
        s += ", fp32 masters and moments in host memory";
    return s;
}

std::int64_t momentBytes(std::int64_t parameters, int bits) {
    if (bits == 32)
        return 8 * parameters;
    const std::int64_t blocks = (parameters + 255) / 256;
    return 2 * (parameters + 4 * blocks); // a byte and a share of a fp32 scale per value, twice
}

MemoryPlan planStageMemory(const ModelConfig& config, int stage, const MemoryPlanRequest& request) {
    const int seqLen = request.seqLen > 0 ? request.seqLen : config.maxSeqLen;
    const bool mixed = request.compute != Dtype::F32;
    const std::int64_t params = config.stageParameterCount(stage);
    const auto usable =
        static_cast<std::int64_t>(std::floor(double(request.deviceBytes) * request.memoryFraction));
    const std::int64_t inFlight = std::max(1, request.microbatchesInFlight);

    MemoryPlan plan;
    plan.usableBytes = usable;
    bool tried = false;
    for (const MemoryLayout& layout : request.layouts) {
        if (layout.optimizerOnHost && !request.gpu)
            continue; // a CPU node's device is the host: nothing to move
        MemoryEstimate parts = estimateStageMemory(config, stage, request.compute, request.batch, seqLen,
                                                   layout.keepActivations, layout.perBlock);
        std::int64_t host = 0;
        if (layout.optimizerOnHost) {
            // The device keeps the compute copy and the gradients it accumulates; the fp32 masters and
            // the moments live in host memory, the step runs there.
            host = 4 * params + momentBytes(params, config.momentBits);
            parts.weightBytes = (mixed ? std::int64_t(dtypeSize(request.compute)) : 4) * params;
            parts.optimizerBytes = 0;
        } else {
            parts.optimizerBytes = momentBytes(params, config.momentBits);
        }
        const std::int64_t fixed = parts.total(0) - parts.workingBytes;
        const std::int64_t need = parts.total(int(inFlight));
        std::int64_t kept = 0;
        if (layout.keepActivations && parts.activationBytesPerMicrobatch > 0 && usable > fixed)
            kept = std::min(kMostKept, (usable - fixed) / parts.activationBytesPerMicrobatch);
        const std::int64_t device = need;
        plan.layout = layout;
        plan.parts = parts;
        plan.deviceBytes = device;
        plan.hostBytes = host;
        plan.maxKept = layout.keepActivations ? kept : 0;
        tried = true;
        if (device <= usable && (!layout.keepActivations || kept >= inFlight)) {
            plan.fits = true;
            return plan;
        }
    }
    if (tried) {
        const double fraction = request.memoryFraction * 100;
        plan.reason = "stage " + std::to_string(stage) + " of model '" + config.name + "' needs " +
                      formatBytes(plan.deviceBytes) + " in " + std::string(dtypeName(request.compute)) +
                      " even with " + describe(plan.layout) + " and " + std::to_string(config.momentBits) +
                      "-bit optimizer moments (" + std::to_string(inFlight) + " microbatches of " +
                      std::to_string(std::int64_t(request.batch) * seqLen) + " tokens in flight); " +
                      (request.gpu ? "this GPU" : "this computer") + " has " +
                      formatBytes(request.deviceBytes) + " (" + formatBytes(usable) + " usable at " +
                      std::to_string(int(std::lround(fraction))) + "%)";
    }
    return plan;
}

std::string formatBytes(std::int64_t bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = double(bytes);
    int unit = 0;
    while (value >= 1024 && unit < 4) {
        value /= 1024;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return text;
}

} // namespace tessera::gpu
