#include "train/StageOptimizer.h"

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
    if (m_options.warmupSteps <= 0)
        return m_options.learningRate;
    const double ramp = std::min(1.0, static_cast<double>(m_steps + 1) / m_options.warmupSteps);
    return m_options.learningRate * ramp;
}

bool StageOptimizer::step(int microbatches, std::optional<double> learningRate) {
    if (microbatches <= 0)
        return true;
    {
        torch::NoGradGuard noGrad;
        double squared = 0;
        for (auto& p : m_parameters)
            if (p.grad().defined()) {
                p.grad().div_(microbatches);
                squared += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
            }
        m_lastNorm = std::sqrt(squared);
        if (!std::isfinite(m_lastNorm)) {
            m_adam->zero_grad();
            return false;
        }
        if (m_options.clipNorm > 0 && m_lastNorm > m_options.clipNorm)
            for (auto& p : m_parameters)
                if (p.grad().defined())
                    p.grad().mul_(m_options.clipNorm / m_lastNorm);
    }
    for (auto& group : m_adam->param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options())
            .lr(learningRate.value_or(currentLearningRate()));
    m_adam->step();
    m_adam->zero_grad();
    ++m_steps;
    return true;
}

bool StageOptimizer::stepAgreed(double learningRate, double clipScale) {
    {
        torch::NoGradGuard noGrad;
        double squared = 0;
        for (auto& p : m_parameters)
            if (p.grad().defined()) {
                if (clipScale != 1.0)
                    p.grad().mul_(clipScale);
                squared += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
            }
        m_lastNorm = std::sqrt(squared);
        if (!std::isfinite(m_lastNorm) || !std::isfinite(learningRate) || learningRate < 0) {
            m_adam->zero_grad();
            return false;
        }
    }
    for (auto& group : m_adam->param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(learningRate);
    m_adam->step();
    m_adam->zero_grad();
    ++m_steps;
    return true;
}

} // namespace tessera::gpu
