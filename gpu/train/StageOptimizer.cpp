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
            squared += squaredNorm(p.grad(), m_options.stepChunkValues);
        }
    return std::sqrt(squared);
}

// Σg² in double, a chunk at a time beyond `chunk` values: a whole 8b head in double was 4 GiB of
// temporaries on the device (a tensor within one chunk sums as before, in one piece).
double StageOptimizer::squaredNorm(const torch::Tensor& g, std::int64_t chunk) {
    if (g.numel() <= chunk)
        return g.to(torch::kFloat64).pow(2).sum().item<double>();
    const torch::Tensor flat = g.reshape({-1});
    torch::Tensor total = torch::zeros({}, g.options().dtype(torch::kFloat64));
    for (std::int64_t begin = 0; begin < flat.numel(); begin += chunk)
        total +=
            flat.narrow(0, begin, std::min(chunk, flat.numel() - begin)).to(torch::kFloat64).pow(2).sum();
    return total.item<double>();
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
        if (m_options.momentBits == 8) {
            stepCoded(i, step);
        } else {
            if (!m_first[i].defined()) {
                m_first[i] = torch::zeros_like(p);
                m_second[i] = torch::zeros_like(p);
            }
            adamwUpdate(p, g, m_first[i], m_second[i], step);
        }
        g.zero_();
    }
    if (varianceMoves)
        ++m_varianceSteps;
    ++m_steps;
    return true;
}

// One parameter's step with 8-bit moments, a chunk of values at a time (chunks start on code blocks, so
// the codes are those of the whole tensor): decode the chunk's moments, step in fp32, code them again.
// Only a chunk's fp32 moments and the coding's temporaries are ever alive — the 8b head's 525 M values
// coded whole took 8.8 GiB more than the memory plan on a GPU.
void StageOptimizer::stepCoded(std::size_t i, const AdamwStep& step) {
    torch::Tensor& p = m_parameters[i];
    Coded& first = m_firstCoded[i];
    Coded& second = m_secondCoded[i];
    const std::int64_t n = p.numel(), blocks = (n + kMomentBlock - 1) / kMomentBlock;
    const bool fresh = !first.codes.defined();
    if (fresh) { // moments start at zero: made chunk by chunk below
        first.codes = torch::empty({blocks, kMomentBlock}, p.options().dtype(torch::kInt8));
        first.scales = torch::empty({blocks, 1}, p.options().dtype(torch::kFloat));
        second.codes = torch::empty({blocks, kMomentBlock}, p.options().dtype(torch::kUInt8));
        second.scales = torch::empty({blocks, 1}, p.options().dtype(torch::kFloat));
    }
    const torch::Tensor values = p.view({-1}), gradient = p.grad().reshape({-1});
    const std::int64_t chunk =
        std::max<std::int64_t>(kMomentBlock, m_options.stepChunkValues / kMomentBlock * kMomentBlock);
    for (std::int64_t begin = 0; begin < n; begin += chunk) {
        const std::int64_t count = std::min(chunk, n - begin);
        const std::int64_t firstBlock = begin / kMomentBlock,
                           blockCount = (count + kMomentBlock - 1) / kMomentBlock;
        const torch::Tensor part = values.narrow(0, begin, count);
        const auto rows = [&](const torch::Tensor& t) { return t.narrow(0, firstBlock, blockCount); };
        const torch::Tensor m =
            fresh ? torch::zeros_like(part) : decodeFirst(rows(first.codes), rows(first.scales), part);
        const torch::Tensor v =
            fresh ? torch::zeros_like(part) : decodeSecond(rows(second.codes), rows(second.scales), part);
        adamwUpdate(part, gradient.narrow(0, begin, count), m, v, step);
        torch::Tensor codes, scales;
        encodeFirst(m, codes, scales);
        rows(first.codes).copy_(codes);
        rows(first.scales).copy_(scales);
        encodeSecond(v, codes, scales);
        rows(second.codes).copy_(codes);
        rows(second.scales).copy_(scales);
    }
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

bool StageOptimizer::setMomentsRange(bool first, std::int64_t offset, std::span<const float> values) {
    if (!momentsSync())
        return false;
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor>& moments = first ? m_first : m_second;
    const auto size = static_cast<std::int64_t>(values.size());
    std::int64_t start = 0; // of the current parameter, in parameter order
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const torch::Tensor& p = m_parameters[i];
        const std::int64_t from = std::max(offset, start), to = std::min(offset + size, start + p.numel());
        if (from < to) {
            if (!m_first[i].defined()) {
                m_first[i] = torch::zeros_like(p);
                m_second[i] = torch::zeros_like(p);
            }
            const torch::Tensor part =
                torch::from_blob(const_cast<float*>(values.data() + (from - offset)), {to - from}, torch::kFloat);
            moments[i].view({-1}).narrow(0, from - start, to - from).copy_(part);
        }
        start += p.numel();
    }
    return true;
}

} // namespace tessera::gpu
