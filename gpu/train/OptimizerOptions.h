#pragma once
// OptimizerOptions: AdamW's settings for a stage — torch-free, so the engine facade can take them.

namespace tessera::gpu {

struct OptimizerOptions {
    double learningRate = 3e-3;
    double beta1 = 0.9;
    double beta2 = 0.95;
    double weightDecay = 0.1;
    double epsilon = 1e-8;
    int warmupSteps = 20; // linear warm-up of the learning rate
};

} // namespace tessera::gpu
