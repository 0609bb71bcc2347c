// SPDX-License-Identifier: Apache-2.0
#include "model/MemoryEstimate.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::gpu {

namespace {

// Bytes StageModel's autograd graph saves for one microbatch of `tokens` tokens (B·T), per part.
// c is the compute dtype's size; the residual stream is fp32.
//
// Per block, per token:
//   fp32:    the block's input and its mid-block residual (2d); with norm gains, the normalised
//            values the gains multiply (2d); in a subspace run, the k coefficients Uᵀ maps (2k)
//   compute: the two norm outputs (2d); q and k through RoPE (the projection, its half-swapped
//            copy, the rotated result, the grouped copy: 4d + 4kv); v regrouped (kv); the
//            attention output before wo (d); SwiGLU's w1 and w3 outputs, silu and the product (4f)
//   and per token the attention probabilities of every head: c·H·T.
// Stage 0 adds the token ids (8) and, subspace, the learned k coefficients (4k); the last stage
// adds the final norm (c·d, gain 4d), the logits (c·V), their fp32 copy when c < 4 (4V) and the
// log-softmax (4V).
struct Activations {
    std::int64_t blocks = 0;
    std::int64_t first = 0;
    std::int64_t last = 0;
};

Activations savedActivations(const ModelConfig& config, int stage, std::int64_t c, std::int64_t tokens,
                             std::int64_t seqLen) {
    const std::int64_t d = config.dModel;
    const std::int64_t kv = static_cast<std::int64_t>(config.nKvHeads) * config.headDim();
    const std::int64_t f = config.ffnHidden;
    const std::int64_t v = config.vocabSize;
    const bool subspace = config.codec == CodecKind::Subspace;
    const std::int64_t k = subspace ? config.subspaceDim() : 0;
    const auto [firstBlock, lastBlock] = config.stageBlocks(stage);

    const std::int64_t fp32 = 4 * (2 * d + (subspace ? 0 : 2 * d) + 2 * k);
    const std::int64_t compute = c * (2 * d + 4 * d + 4 * kv + kv + d + 4 * f);
    const std::int64_t attention = c * config.nHeads * seqLen;
    Activations a;
    a.blocks = tokens * (fp32 + compute + attention) * (lastBlock - firstBlock);
    if (stage == 0)
        a.first = tokens * (8 + 4 * k);
    if (stage == config.stages - 1)
        a.last = tokens * (c * d + (subspace ? 0 : 4 * d) + c * v + (c < 4 ? 4 * v : 0) + 4 * v);
    return a;
}

} // namespace

MemoryEstimate estimateStageMemory(const ModelConfig& config, int stage, Dtype compute, int batch, int seqLen,
                                   bool keepActivations, bool perBlock) {
    if (compute != Dtype::F32 && compute != Dtype::BF16 && compute != Dtype::F16)
        throw std::invalid_argument("the compute dtype must be fp32, bf16 or fp16");
    if (stage < 0 || stage >= config.stages || batch < 1 || seqLen < 1)
        throw std::invalid_argument("stage, batch or sequence length out of range");
    const auto c = static_cast<std::int64_t>(dtypeSize(compute));
    const std::int64_t params = config.stageParameterCount(stage);
    const std::int64_t d = config.dModel;
    const bool mixed = compute != Dtype::F32;

    MemoryEstimate m;
    m.weightBytes = 4 * params + (mixed ? c * params : 0);
    m.gradientBytes = 4 * params + (mixed ? c * params : 0);
    m.optimizerBytes = 8 * params;
    m.bufferBytes = 2 * static_cast<std::int64_t>(config.maxSeqLen) * config.headDim() * c;
    if (config.codec == CodecKind::Subspace) // U; E's rows are made per microbatch (model/Subspace)
        m.bufferBytes += 4 * d * config.subspaceDim();

    const std::int64_t tokens = static_cast<std::int64_t>(batch) * seqLen;
    const bool last = stage == config.stages - 1;
    // The input (token ids on stage 0) and the output (nothing but a scalar on the last stage).
    const std::int64_t boundary = (stage == 0 ? 8 * tokens : 4 * tokens * d) + (last ? 0 : 4 * tokens * d);
    const Activations saved = savedActivations(config, stage, c, tokens, seqLen);
    const std::int64_t inside = saved.blocks + saved.first + saved.last;
    if (keepActivations) {
        m.activationBytesPerMicrobatch = boundary + inside;
    } else if (perBlock) {
        const auto [firstBlock, lastBlock] = config.stageBlocks(stage);
        const std::int64_t blocks = std::max(1, lastBlock - firstBlock);
        m.activationBytesPerMicrobatch = boundary;
        // The head and loss a chunk of tokens at a time; the gradient of the stage's output meanwhile.
        const std::int64_t chunk = std::min(tokens, kLossChunkTokens);
        const std::int64_t head = saved.last / tokens * chunk + (saved.last > 0 ? 4 * tokens * d : 0);
        m.workingBytes = blocks * 4 * tokens * d + saved.blocks / blocks + saved.first + head;
        if (mixed) {
            // The largest part whose compute-dtype gradients are alive at once.
            std::int64_t largest = config.blockParameterCount();
            if (stage == config.stages - 1)
                largest = std::max<std::int64_t>(largest, std::int64_t(config.vocabSize) * d + d);
            if (stage == 0)
                largest = std::max<std::int64_t>(largest, params - config.blockParameterCount() * blocks);
            m.gradientBytes = 4 * params + c * largest;
        }
    } else {
        m.activationBytesPerMicrobatch = boundary;
        m.workingBytes = inside;
    }
    return m;
}

} // namespace tessera::gpu
