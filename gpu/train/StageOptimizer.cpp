// SPDX-License-Identifier: Apache-2.0
#include "train/StageOptimizer.h"

#include "train/LearningRateSchedule.h"

#include <algorithm>
#include <cmath>

namespace tessera::gpu {

StageOptimizer::StageOptimizer(std::vector<torch::Tensor> parameters, const OptimizerOptions& options)
    : m_parameters(std::move(parameters))
    , m_options(options) {
    torch::optim::AdamWOptions adam(options.learningRate);
    adam.betas({options.beta1, options.beta2}).weight_decay(options.weightDecay).eps(options.epsilon);
    m_adam = std::make_unique<torch::optim::AdamW>(m_parameters, adam);
}

double StageOptimizer::currentLearningRate() const {
    LearningRateSchedule warmup;
    warmup.peak = m_options.learningRate;
    warmup.warmupSteps = m_options.warmupSteps;
    return warmup.at(m_steps + 1);
}

bool StageOptimizer::step(int microbatches, std::optional<double> learningRate) {
    if (microbatches <= 0)
        return true;
    // The mean over the microbatches, then this replica's own clip.
    const double norm = scaleGradients(1.0 / microbatches);
    const double clip = m_options.clipNorm > 0 && norm > m_options.clipNorm ? m_options.clipNorm / norm : 1.0;
    return applyAdam(learningRate.value_or(currentLearningRate()), clip);
}

bool StageOptimizer::stepAgreed(double learningRate, double clipScale) {
    return applyAdam(learningRate, clipScale);
}

double StageOptimizer::scaleGradients(double factor) {
    torch::NoGradGuard noGrad;
    double squared = 0;
    for (auto& p : m_parameters)
        if (p.grad().defined()) {
            if (factor != 1.0)
                p.grad().mul_(factor);
            squared += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
        }
    return std::sqrt(squared);
}

bool StageOptimizer::applyAdam(double learningRate, double clipScale) {
    m_lastNorm = scaleGradients(clipScale);
    if (!std::isfinite(m_lastNorm) || !std::isfinite(learningRate) || learningRate < 0) {
        m_adam->zero_grad();
        return false;
    }
    for (auto& group : m_adam->param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(learningRate);
    m_adam->step();
    m_adam->zero_grad();
    ++m_steps;
    return true;
}

} // namespace tessera::gpu
