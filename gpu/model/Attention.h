// SPDX-License-Identifier: Apache-2.0
#pragma once
// Attention: causal grouped-query self-attention with RoPE; nHeads query heads share nKvHeads
// key/value heads. Internal to gpu/ (includes torch).

#include "base/ModelConfig.h"
#include "model/BlockContext.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace tessera::gpu {

class AttentionImpl : public torch::nn::Module {
public:
    // wo writes d outputs, or k in a subspace run (the block maps them by Uᵀ).
    explicit AttentionImpl(const ModelConfig& config);

    // x: [B, T, d] in the compute dtype -> [B, T, d or k], compute dtype.
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& context);

    torch::nn::Linear wq{nullptr}, wk{nullptr}, wv{nullptr}, wo{nullptr};

private:
    std::int64_t m_heads;
    std::int64_t m_kvHeads;
    std::int64_t m_headDim;
};
TORCH_MODULE(Attention);

} // namespace tessera::gpu
