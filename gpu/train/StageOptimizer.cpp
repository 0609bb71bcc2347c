// SPDX-License-Identifier: Apache-2.0
#include "train/StageOptimizer.h"

#include "train/LearningRateSchedule.h"
#include "train/MomentCodes.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::gpu {

StageOptimizer::StageOptimizer(std::vector<torch::Tensor> parameters, const OptimizerOptions& options)
    : m_parameters(std::move(parameters))
    , m_options(options)
    , m_first(m_parameters.size())
    , m_second(m_parameters.size())
    , m_firstCoded(m_options.momentBits == 8 ? m_parameters.size() : 0)
    , m_secondCoded(m_options.momentBits == 8 ? m_parameters.size() : 0) {
    if (m_options.momentBits != 32 && m_options.momentBits != 8)
        throw std::invalid_argument("the optimizer's moments are kept in 32 or 8 bits");
}

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
    const AdamwStep step{learningRate,      beta1,       beta2,       m_options.weightDecay,
                         m_options.epsilon, correction1, correction2, varianceMoves};
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        torch::Tensor& p = m_parameters[i];
        if (!p.grad().defined())
            continue;
        const torch::Tensor& g = p.grad();
        const bool coded = m_options.momentBits == 8;
        if (coded) {
            Coded& first = m_firstCoded[i];
            Coded& second = m_secondCoded[i];
            m_first[i] =
                first.codes.defined() ? decodeFirst(first.codes, first.scales, p) : torch::zeros_like(p);
            m_second[i] =
                second.codes.defined() ? decodeSecond(second.codes, second.scales, p) : torch::zeros_like(p);
        } else if (!m_first[i].defined()) {
            m_first[i] = torch::zeros_like(p);
            m_second[i] = torch::zeros_like(p);
        }
        adamwUpdate(p, g, m_first[i], m_second[i], step);
        g.zero_();
        if (coded) { // only one parameter's fp32 moments are ever alive
            encodeFirst(m_first[i], m_firstCoded[i].codes, m_firstCoded[i].scales);
            encodeSecond(m_second[i], m_secondCoded[i].codes, m_secondCoded[i].scales);
            m_first[i] = torch::Tensor();
            m_second[i] = torch::Tensor();
        }
    }
    if (varianceMoves)
        ++m_varianceSteps;
    ++m_steps;
    return true;
}

} // namespace tessera::gpu

namespace tessera::gpu {

void adamwUpdate(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& first,
                 const torch::Tensor& second, const AdamwStep& s) {
    torch::NoGradGuard noGrad;
    p.mul_(1.0 - s.learningRate * s.weightDecay);
    first.mul_(s.beta1).add_(g, 1.0 - s.beta1);
    if (s.varianceMoves)
        second.mul_(s.beta2).addcmul_(g, g, 1.0 - s.beta2);
    const torch::Tensor denominator =
        (s.correction2 > 0 ? second.sqrt() / std::sqrt(s.correction2) : second.sqrt()).add_(s.epsilon);
    p.addcdiv_(first, denominator, -s.learningRate / s.correction1);
}

} // namespace tessera::gpu
