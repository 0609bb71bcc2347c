// SPDX-License-Identifier: Apache-2.0
#pragma once
// MomentCodes: AdamW's moments in 8 bits (StageOptimizer's momentBits 8), coded per block of 256
// values — shared by the optimizer and the coordinator's checkpoint on disk, which codes a chunk of
// a parameter at a time (chunks start on block boundaries, so the codes are the same). Internal to
// gpu/ (torch tensors).

#include <torch/types.h>

#include <cstdint>

namespace tessera::gpu {

inline constexpr std::int64_t kMomentBlock = 256;

// The first moment: a sign and a 7-bit log code per value (int8, padded to whole blocks) and the
// block's largest |m| (fp32, one per block).
void encodeFirst(const torch::Tensor& m, torch::Tensor& codes, torch::Tensor& scales);
torch::Tensor decodeFirst(const torch::Tensor& codes, const torch::Tensor& scales, const torch::Tensor& like);
// The second moment (≥ 0), through its square root: an 8-bit log code (uint8) and the block's √v_max.
void encodeSecond(const torch::Tensor& v, torch::Tensor& codes, torch::Tensor& scales);
torch::Tensor decodeSecond(const torch::Tensor& codes, const torch::Tensor& scales,
                           const torch::Tensor& like);

} // namespace tessera::gpu
