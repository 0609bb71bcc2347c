// SPDX-License-Identifier: Apache-2.0
#include "SimulatorReference.h"

#include "train/SwarmSimulator.h"

#include <torch/torch.h>

#include <chrono>

using namespace tessera::gpu;

SimulatorCurve runSimulator(const SimulatorRequest& request,
                            const std::function<void(int, double)>& progress) {
    SimulatorCurve curve;
    auto config = ModelConfig::fromJson(request.modelJson);
    if (!config) {
        curve.error = "the coordinator's model config: " + config.message();
        return curve;
    }
    SimOptions options;
    options.config = *config;
    options.replicas = request.replicas;
    options.microbatchesPerStep = request.microbatchesPerStep;
    options.batch = request.batch;
    options.seqLen = request.seq;
    options.averagingInterval = request.averagingInterval;
    options.partitions = request.partitions;
    options.gradientBits = request.gradientBits;
    options.gradientRank = request.gradientRank;
    options.routingSeed = request.routingSeed;
    // The coordinator seeds its data with the model's seed on a fresh run: the same here.
    options.seed = config->seed;
    curve.seed = options.seed;
    auto sim = SwarmSimulator::create(options);
    if (!sim) {
        curve.error = sim.message();
        return curve;
    }
    curve.description = (*sim)->describe();
    curve.threads = torch::get_num_threads();
    const auto start = std::chrono::steady_clock::now();
    for (int s = 1; s <= request.steps; ++s) {
        const SimStep step = (*sim)->step();
        curve.trainLoss.push_back(step.trainLoss);
        curve.tokens = step.tokens;
        if (progress)
            progress(s, step.trainLoss);
    }
    curve.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return curve;
}
