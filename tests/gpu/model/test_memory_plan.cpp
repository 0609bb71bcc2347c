// SPDX-License-Identifier: Apache-2.0
// planStageMemory: a node lays its stage out in the fastest layout its memory holds — graphs kept
// when they fit, recomputed otherwise, a block at a time as a last resort — with the run's moments
// (32 or 8 bits) counted as the optimizer keeps them, and says in words what a stage that fits
// nowhere needs.
#include "GpuTest.h"
#include "model/MemoryPlan.h"

#include <stdexcept>
#include <string>

using namespace tessera::gpu;

namespace {

constexpr std::int64_t kGiB = std::int64_t(1) << 30;

ModelConfig preset(const char* name, int momentBits = 32) {
    ModelConfig c = ModelConfig::preset(name).value();
    c.momentBits = momentBits;
    return c;
}

MemoryPlanRequest gpu(std::int64_t bytes) {
    MemoryPlanRequest r;
    r.deviceBytes = bytes;
    r.gpu = true;
    r.compute = Dtype::BF16;
    return r;
}

} // namespace

TESSERA_TEST(aSmallModelKeepsItsGraphsAsManyAsFit) {
    MemoryPlanRequest cpu;
    cpu.deviceBytes = 24 * kGiB;
    const MemoryPlan tiny = planStageMemory(preset("tiny"), 0, cpu);
    CHECK(tiny.fits && tiny.layout.keepActivations);
    CHECK(tiny.maxKept == 64); // the engine's cap, far below what 24 GiB holds
    CHECK(tiny.deviceBytes <= tiny.usableBytes && tiny.hostBytes == 0);

    // The small preset's stage 0 on a GPU of 1.4 GB: fits, but only a few graphs.
    const MemoryPlan tight = planStageMemory(preset("small"), 0, gpu(1'400'000'000));
    CHECK_MSG(tight.fits, tight.reason);
    if (tight.layout.keepActivations)
        CHECK_MSG(tight.maxKept >= 4 && tight.maxKept < 64, tight.maxKept);
}

TESSERA_TEST(an8bStageFitsA24GbGpuOnlyWith8BitMomentsAndRecomputingABlockAtATime) {
    const std::int64_t gb24 = 24'000'000'000;
    // Every stage, the head's too (its loss a chunk of tokens at a time).
    for (int s = 0; s < 7; ++s) {
        CHECK_MSG(!planStageMemory(preset("8b"), s, gpu(gb24)).fits, s);
        const MemoryPlan p = planStageMemory(preset("8b", 8), s, gpu(gb24));
        CHECK_MSG(p.fits && p.layout.perBlock, s << ": " << p.reason);
    }
    const MemoryPlan fp32Moments = planStageMemory(preset("8b"), 3, gpu(gb24));
    CHECK(!fp32Moments.fits);
    const MemoryPlan plan = planStageMemory(preset("8b", 8), 3, gpu(gb24));
    CHECK_MSG(plan.fits, plan.reason);
    CHECK(!plan.layout.keepActivations && plan.layout.perBlock && !plan.layout.optimizerOnHost);
    const std::int64_t params = preset("8b").stageParameterCount(3);
    CHECK(plan.parts.optimizerBytes == momentBytes(params, 8));
    CHECK(momentBytes(params, 8) * 3 < momentBytes(params, 32)); // ~2 bytes a parameter instead of 8
    CHECK(plan.deviceBytes <= plan.usableBytes && plan.deviceBytes > 15 * kGiB);
    // The same stage on an 80 GB GPU keeps its graphs.
    CHECK(planStageMemory(preset("8b", 8), 3, gpu(80'000'000'000)).layout.keepActivations);
}

TESSERA_TEST(aBlockAtATimeHoldsOneBlocksActivations) {
    const ModelConfig c = preset("8b");
    const auto whole = estimateStageMemory(c, 3, Dtype::BF16, 1, 4096, false, false);
    const auto perBlock = estimateStageMemory(c, 3, Dtype::BF16, 1, 4096, false, true);
    const auto [first, last] = c.stageBlocks(3);
    // Working: one block's saved activations and every block's fp32 input (T·d each).
    const std::int64_t inputs = std::int64_t(last - first) * 4 * 4096 * c.dModel;
    CHECK(perBlock.workingBytes - inputs == whole.workingBytes / (last - first));
    // Only one block's bf16 gradients are alive before they are folded into the fp32 ones.
    CHECK(perBlock.gradientBytes == 4 * c.stageParameterCount(3) + 2 * c.blockParameterCount());
    CHECK(perBlock.activationBytesPerMicrobatch == whole.activationBytesPerMicrobatch);
}

TESSERA_TEST(aStageThatFitsNowhereIsSaidInWords) {
    const MemoryPlan plan = planStageMemory(preset("8b"), 6, gpu(12'000'000'000));
    CHECK(!plan.fits);
    CHECK(plan.layout.perBlock); // the most frugal layout tried, last
    const std::string& r = plan.reason;
    CHECK_MSG(r.find("stage 6 of model '8b' needs " + formatBytes(plan.deviceBytes)) == 0, r);
    CHECK_MSG(r.find("32-bit optimizer moments") != std::string::npos, r);
    CHECK_MSG(r.find("this GPU has 11.2 GiB (10.1 GiB usable at 90%)") != std::string::npos, r);
    // The layout not built is planned only when asked: the 8b head stage on 16 GB would need it.
    MemoryPlanRequest asked = gpu(16'000'000'000);
    CHECK(!planStageMemory(preset("8b", 8), 6, asked).fits);
    asked.layouts = allLayouts();
    const MemoryPlan host = planStageMemory(preset("8b", 8), 6, asked);
    CHECK_MSG(host.fits && host.layout.optimizerOnHost, host.reason);
    CHECK(host.hostBytes ==
          4 * preset("8b").stageParameterCount(6) + momentBytes(preset("8b").stageParameterCount(6), 8));
}

TESSERA_TEST(misuseThrows) {
    bool threw = false;
    try {
        (void)planStageMemory(preset("tiny"), 5, gpu(kGiB));
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
}
