// SPDX-License-Identifier: Apache-2.0
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
    // The stage's averaged gradient is scaled down to this L2 norm when larger (0: no clip); a
    // gradient with a value that is not finite is never applied (the step is skipped). With
    // gradient averaging the clip is global, over every stage (the step's clip scale).
    double clipNorm = 1.0;
    // AdamW's moments in 32 or 8 bits (the run's ModelConfig::momentBits; see StageOptimizer).
    int momentBits = 32;
    // With 8-bit moments, how many values a step decodes, updates and codes at once (rounded down to
    // whole code blocks of 256): what bounds the step's memory beyond the codes themselves.
    long long stepChunkValues = 1 << 22;
};

} // namespace tessera::gpu
