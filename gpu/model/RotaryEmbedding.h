// SPDX-License-Identifier: Apache-2.0
#pragma once
// RotaryEmbedding: the RoPE tables of one model (positions 0..maxSeqLen-1, theta from the
// config) and their application to queries and keys. Internal to gpu/ (includes torch).

#include "base/ModelConfig.h"

#include <torch/types.h>

namespace tessera::gpu {

class RotaryEmbedding {
public:
    RotaryEmbedding(const ModelConfig& config, torch::Device device, torch::ScalarType dtype);

    // x: [B, T, heads, headDim], T <= maxSeqLen; position t of the sequence is rotated by
    // t·θ_i in the plane of dimensions (i, i + headDim/2) (the "rotate half" layout).
    torch::Tensor apply(const torch::Tensor& x) const;

private:
    torch::Tensor m_cos; // [maxSeqLen, 1, headDim]
    torch::Tensor m_sin; // the same, with the sign of the first half flipped
};

} // namespace tessera::gpu
