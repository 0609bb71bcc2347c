// SPDX-License-Identifier: Apache-2.0
// The simulator's asynchronous pipeline lands each step's update `pipelineDelay` steps late: what a
// tessera-sim --async --delay D run measures (BENCHMARKS.md, "Why the home link stays below 80%").
//
// What is tried: delays 0 to 3 on the tiny model (one stage, one replica): the held-out loss must not
// move while no update has landed (D steps) and must move at step D + 1; a delay of 4 is refused in
// words.
#include "GpuTest.h"
#include "train/SwarmSimulator.h"

using namespace tessera;
using namespace tessera::gpu;

namespace {

SimOptions options(int delay) {
    SimOptions o;
    Result<ModelConfig> config = ModelConfig::preset("tiny");
    CHECK(config);
    o.config = *config;
    o.config.stages = 1;
    o.config.codec = CodecKind::None;
    o.microbatchesPerStep = 2;
    o.batch = 2;
    o.seqLen = 16;
    o.evalBatches = 2;
    o.pipelineDelay = delay;
    o.schedule.warmupSteps = 0; // the first update moves the weights
    return o;
}

} // namespace

TESSERA_TEST(anUpdateLandsDelayStepsLate) {
    for (int delay = 0; delay <= 3; ++delay) {
        Result<std::unique_ptr<SwarmSimulator>> sim = SwarmSimulator::create(options(delay));
        CHECK_MSG(sim, sim.message());
        const double initial = (*sim)->evaluate();
        for (int step = 1; step <= delay; ++step) {
            (*sim)->step();
            CHECK_MSG((*sim)->evaluate() == initial, "delay " << delay << ": moved at step " << step);
        }
        (*sim)->step();
        CHECK_MSG((*sim)->evaluate() != initial,
                  "delay " << delay << ": no update landed at step " << delay + 1);
    }
}

TESSERA_TEST(aDelayBeyondThreeIsRefused) {
    Result<std::unique_ptr<SwarmSimulator>> sim = SwarmSimulator::create(options(4));
    CHECK(!sim);
    CHECK_MSG(sim.message().find("0 (synchronous) to 3 steps") != std::string::npos, sim.message());
}
