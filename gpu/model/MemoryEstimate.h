// SPDX-License-Identifier: Apache-2.0
#pragma once
// MemoryEstimate: what one stage of a model needs in device memory while it trains, by parts,
// from the config's arithmetic alone (nothing is allocated). Torch-free.

#include "base/Dtype.h"
#include "base/ModelConfig.h"

#include <cstdint>

namespace tessera::gpu {

// Recomputing a block at a time, the last stage computes its head and loss this many tokens at a time
// (StageModel): the logits over the vocabulary, its largest tensors, of these tokens alive at once.
inline constexpr std::int64_t kLossChunkTokens = 1024;

struct MemoryEstimate {
    std::int64_t weightBytes = 0;    // fp32 masters, plus their compute-dtype copy when it is not fp32
    std::int64_t gradientBytes = 0;  // fp32 gradients, plus the compute-dtype ones of one backward
    std::int64_t optimizerBytes = 0; // AdamW's two fp32 moments
    std::int64_t bufferBytes = 0;    // fixed tensors: RoPE tables and U (E's rows are made per microbatch)
    // Held per microbatch between its forward and its backward: the stage's input and output
    // when recomputing, every saved activation when keeping them.
    std::int64_t activationBytesPerMicrobatch = 0;
    // Live only while one microbatch's backward runs: the activations a recompute rebuilds.
    std::int64_t workingBytes = 0;

    std::int64_t total(int microbatchesInFlight) const {
        return weightBytes + gradientBytes + optimizerBytes + bufferBytes +
               activationBytesPerMicrobatch * microbatchesInFlight + workingBytes;
    }
};

// compute: F32, BF16 or F16 (anything else throws std::invalid_argument). batch·seqLen tokens
// per microbatch. The activation count follows StageModel's graph (see the .cpp); it is an
// estimate of the saved tensors, not of the allocator's fragmentation or transient gradients.
// perBlock (with keepActivations false): the backward recomputes one block at a time
// (StageModel::setRecomputePerBlock), so the working set is every block's input and one block's
// activations, and the compute-dtype gradients alive at once are one block's (or the head's, the
// embedding's) — they are folded into the fp32 ones after each block.
MemoryEstimate estimateStageMemory(const ModelConfig& config, int stage, Dtype compute, int batch, int seqLen,
                                   bool keepActivations, bool perBlock = false);

} // namespace tessera::gpu
