// SPDX-License-Identifier: Apache-2.0
#pragma once
// WirePacking: the byte-level pieces every codec body is made of (raw tensors, token ids,
// absmax-int8 rows), vectorised with torch; memcpy only moves the finished bytes.

#include "base/Dtype.h"

#include <torch/types.h>

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::gpu::wire {

torch::ScalarType scalarType(Dtype dtype);

// Token ids are sent in the fewest whole bytes that hold vocab-1: 2 up to 65536 ids, 3 up to
// 2^24 (ModelConfig's limit; Llama-3's 128256 needs 17 bits), else 4.
int tokenBytesFor(int vocabSize);

// Appends a CPU tensor's elements in host order (little-endian: see WirePacking.cpp).
void appendTensor(std::vector<std::uint8_t>& out, const torch::Tensor& t);
// A new [count] tensor of `type` holding a copy of `bytes` (exactly count elements long).
torch::Tensor readTensor(std::span<const std::uint8_t> bytes, torch::ScalarType type, std::int64_t count);

// ids: [N] int64 in [0, 2^(8·width)). Little-endian, `width` bytes each.
void appendTokens(std::vector<std::uint8_t>& out, const torch::Tensor& ids, int width);
torch::Tensor readTokens(std::span<const std::uint8_t> bytes, std::int64_t count, int width);

// Absmax int8 per row: scale = max|row| / 127 (fp32), q = round(row / scale). Each value comes
// back within scale/2 = max|row|/254 of where it was; an all-zero row has scale 0.
struct Int8Rows {
    torch::Tensor scales; // [R] fp32
    torch::Tensor values; // [R, L] int8
};
Int8Rows quantiseRows(const torch::Tensor& rows);
torch::Tensor dequantiseRows(const torch::Tensor& scales, const torch::Tensor& values);
// Scales from the wire must be finite and non-negative (a NaN or inf scale is a corrupt frame,
// or a sender whose activations already diverged).
bool scalesValid(const torch::Tensor& scales);

} // namespace tessera::gpu::wire
