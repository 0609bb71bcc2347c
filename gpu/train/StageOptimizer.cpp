// SPDX-License-Identifier: Apache-2.0
#include "train/StageOptimizer.h"

#include "train/LearningRateSchedule.h"

#include <algorithm>
#include <cmath>

namespace tessera::gpu {

StageOptimizer::StageOptimizer(std::vector<torch::Tensor> parameters, const OptimizerOptions& options)
    : m_parameters(std::move(parameters))
    , m_options(options)
    , m_first(m_parameters.size())
    , m_second(m_parameters.size()) {}

void StageOptimizer::zeroGradients() {
    for (auto& p : m_parameters)
        if (p.grad().defined())
            p.grad().zero_();
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

bool StageOptimizer::stepAgreed(double learningRate, double clipScale, bool varianceMoves) {
    return applyAdam(learningRate, clipScale, varianceMoves);
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

bool StageOptimizer::applyAdam(double learningRate, double clipScale, bool varianceMoves) {
    m_lastNorm = scaleGradients(clipScale);
    if (!std::isfinite(m_lastNorm) || !std::isfinite(learningRate) || learningRate < 0) {
        zeroGradients();
        return false;
    }
    // AdamW as torch::optim::AdamW computes it (decoupled decay, bias-corrected moments); the
    // second moment stays as it is unless varianceMoves.
    torch::NoGradGuard noGrad;
    const double beta1 = m_options.beta1, beta2 = m_options.beta2;
    const double correction1 = 1.0 - std::pow(beta1, static_cast<double>(m_steps + 1));
    const double correction2 =
        1.0 - std::pow(beta2, static_cast<double>(m_varianceSteps + (varianceMoves ? 1 : 0)));
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        torch::Tensor& p = m_parameters[i];
        if (!p.grad().defined())
            continue;
        const torch::Tensor& g = p.grad();
        if (!m_first[i].defined()) {
            m_first[i] = torch::zeros_like(p);
            m_second[i] = torch::zeros_like(p);
        }
        p.mul_(1.0 - learningRate * m_options.weightDecay);
        m_first[i].mul_(beta1).add_(g, 1.0 - beta1);
        if (varianceMoves)
            m_second[i].mul_(beta2).addcmul_(g, g, 1.0 - beta2);
        const torch::Tensor denominator =
            (correction2 > 0 ? m_second[i].sqrt() / std::sqrt(correction2) : m_second[i].sqrt())
                .add_(m_options.epsilon);
        p.addcdiv_(m_first[i], denominator, -learningRate / correction1);
        g.zero_();
    }
    if (varianceMoves)
        ++m_varianceSteps;
    ++m_steps;
    return true;
}

} // namespace tessera::gpu
