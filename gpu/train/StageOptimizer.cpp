// SPDX-License-Identifier: Apache-2.0
#include "train/StageOptimizer.h"

#include "train/LearningRateSchedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::gpu {

namespace {

constexpr std::int64_t kMomentBlock = 256;
constexpr float kTiny = 1e-30f;

// x flattened and zero-padded to whole blocks: [blocks, 256].
torch::Tensor inBlocks(const torch::Tensor& x) {
    const torch::Tensor flat = x.reshape({-1});
    const std::int64_t pad = (kMomentBlock - flat.numel() % kMomentBlock) % kMomentBlock;
    return (pad == 0 ? flat : torch::constant_pad_nd(flat, {0, pad})).view({-1, kMomentBlock});
}

torch::Tensor fromBlocks(const torch::Tensor& blocks, const torch::Tensor& like) {
    return blocks.reshape({-1}).narrow(0, 0, like.numel()).view(like.sizes());
}

// The first moment: a sign and a 7-bit log code — magnitude code 1..127 for max|m|·2^((code − 127)/5)
// per block, 0 for 0: ±7% of |m| over 25 octaves below the block's largest (a linear code would
// round every value under 1/254 of it to zero and stall those weights).
void encodeFirst(const torch::Tensor& m, torch::Tensor& codes, torch::Tensor& scales) {
    const torch::Tensor b = inBlocks(m);
    scales = b.abs().amax(1, true);
    const torch::Tensor magnitude = b.abs();
    const torch::Tensor level = magnitude.div(scales.clamp_min(kTiny))
                                    .clamp_min_(kTiny)
                                    .log2_()
                                    .mul_(5.0f)
                                    .add_(127.0f)
                                    .round_()
                                    .clamp_(1, 127);
    codes = level.mul_(b.sign()).to(torch::kInt8); // sign 0: code 0
}

torch::Tensor decodeFirst(const torch::Tensor& codes, const torch::Tensor& scales,
                          const torch::Tensor& like) {
    const torch::Tensor c = codes.to(torch::kFloat);
    const torch::Tensor value = c.abs().sub_(127.0f).div_(5.0f).exp2_().mul_(scales).mul_(c.sign());
    return fromBlocks(value, like).clone(); // sign(0) = 0: a zero code decodes to 0
}

// The second moment (≥ 0), through its square root (what the update divides by): 0 for 0, else code
// 1..255 for √v_max·2^((code − 255)/10) per block — ±3.5% of √v over 25 octaves of √v (50 of v).
void encodeSecond(const torch::Tensor& v, torch::Tensor& codes, torch::Tensor& scales) {
    const torch::Tensor b = inBlocks(v).sqrt();
    scales = b.amax(1, true);
    const torch::Tensor level = b.div(scales.clamp_min(kTiny))
                                    .clamp_min_(kTiny)
                                    .log2_()
                                    .mul_(10.0f)
                                    .add_(255.0f)
                                    .round_()
                                    .clamp_(1, 255);
    codes = level.mul_(b.sign()).to(torch::kUInt8); // √0 codes 0
}

torch::Tensor decodeSecond(const torch::Tensor& codes, const torch::Tensor& scales,
                           const torch::Tensor& like) {
    const torch::Tensor c = codes.to(torch::kFloat);
    const torch::Tensor root = c.sub(255.0f).div_(10.0f).exp2_().mul_(scales).mul_(c.sign()); // code 0: 0
    return fromBlocks(root.mul_(root), like).clone();
}

} // namespace

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
        p.mul_(1.0 - learningRate * m_options.weightDecay);
        m_first[i].mul_(beta1).add_(g, 1.0 - beta1);
        if (varianceMoves)
            m_second[i].mul_(beta2).addcmul_(g, g, 1.0 - beta2);
        const torch::Tensor denominator =
            (correction2 > 0 ? m_second[i].sqrt() / std::sqrt(correction2) : m_second[i].sqrt())
                .add_(m_options.epsilon);
        p.addcdiv_(m_first[i], denominator, -learningRate / correction1);
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
