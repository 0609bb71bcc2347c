// SPDX-License-Identifier: Apache-2.0
#pragma once
// SimulatorReference: runs the in-process SwarmSimulator as the reference a real swarm is compared
// with. A torch-free interface, so bench_swarm's Qt code never sees torch headers.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct SimulatorRequest {
    std::string modelJson; // the coordinator's own model config (GET /v1/info "model")
    int replicas = 1;
    int microbatchesPerStep = 8;
    int batch = 8;
    int seq = 64;
    int averagingInterval = 20;
    int partitions = 20;
    int steps = 150;
    int gradientBits = 32;         // the coordinator's (GET /v1/status gradients.bits)
    int gradientRank = 0;          // the coordinator's (gradients.rank): PowerSGD's two rounds
    std::uint64_t routingSeed = 0; // another replica for each microbatch (0: the simulator's own)
};

struct SimulatorCurve {
    std::string error; // empty when it ran
    std::string description;
    std::uint64_t seed = 0;        // the data seed used: the model config's, as the coordinator's
    std::vector<double> trainLoss; // per step, mean over the step's microbatches
    std::int64_t tokens = 0;
    double seconds = 0;
    int threads = 0; // LibTorch's intra-op threads
};

// `progress(step, loss)` is called after every step.
SimulatorCurve runSimulator(const SimulatorRequest& request,
                            const std::function<void(int, double)>& progress = {});
