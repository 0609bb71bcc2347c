// SPDX-License-Identifier: Apache-2.0
#pragma once
// TokenFrame: the binary form of a [batch, seq] block of token ids (stage 0's input, the last
// stage's targets). Torch-free, so core/ can build frames from its data without LibTorch.
//
// Layout (little-endian): char[4] magic "TST1", u32 batch, u32 seq, then batch·seq u32 ids,
// row-major. Decoding checks the magic, the sizes against the model, the exact length and
// every id against the vocabulary before it allocates anything.

#include "base/Result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tessera::gpu {

using Bytes = std::vector<std::uint8_t>;

struct TokenBatch {
    int batch = 0;
    int seq = 0;
    std::vector<std::int32_t> ids; // batch·seq ids, row-major, each in [0, vocab)
};

inline constexpr std::size_t kTokenFrameHeaderSize = 12;

// Refuses (as an Error, never a throw) an empty shape, a size that is not batch·seq, or a
// negative id; ids ≥ vocab are the receiver's to refuse (it knows the vocabulary).
Result<Bytes> encodeTokens(std::span<const std::int32_t> ids, int batch, int seq);

// Every failure names what is wrong (the magic, a size and its bound, the first bad id).
Result<TokenBatch> decodeTokens(std::span<const std::uint8_t> frame, int vocabSize, int maxSeqLen,
                                std::int64_t maxTokens);

} // namespace tessera::gpu
