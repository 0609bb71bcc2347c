#pragma once
// StageOptimizer: AdamW over one stage's parameters, stepping on gradients accumulated over
// however many microbatches this replica processed since its last step. Internal to gpu/.

#include "train/OptimizerOptions.h"

#include <torch/optim/adamw.h>

#include <memory>
#include <vector>

namespace tessera::gpu {

class StageOptimizer {
public:
    StageOptimizer(std::vector<torch::Tensor> parameters, const OptimizerOptions& options = {});

    // Averages the accumulated gradients over `microbatches`, clips them to options.clipNorm,
    // steps, and zeroes them. A replica that processed no microbatch this step does not move (its
    // moments stay). False when a gradient value is not finite: nothing moves, the gradients are
    // zeroed (one poisoned step never reaches AdamW's moments, which would keep it for good).
    bool step(int microbatches);
    double lastGradientNorm() const { return m_lastNorm; }
    std::int64_t steps() const { return m_steps; }
    double currentLearningRate() const;

private:
    std::vector<torch::Tensor> m_parameters;
    OptimizerOptions m_options;
    std::unique_ptr<torch::optim::AdamW> m_adam;
    std::int64_t m_steps = 0;
    double m_lastNorm = 0;
};

} // namespace tessera::gpu
