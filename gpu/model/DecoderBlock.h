// SPDX-License-Identifier: Apache-2.0
#pragma once
// DecoderBlock: one pre-norm Llama block, x += attn(norm1(x)); x += mlp(norm2(x)), on an fp32
// residual stream. Internal to gpu/ (includes torch).

#include "base/ModelConfig.h"
#include "model/Attention.h"
#include "model/BlockContext.h"
#include "model/RmsNorm.h"
#include "model/SwiGlu.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace tessera::gpu {

class DecoderBlockImpl : public torch::nn::Module {
public:
    explicit DecoderBlockImpl(const ModelConfig& config);

    // x: [B, T, d] fp32 -> the same after this block.
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& context);

    RmsNorm norm1{nullptr};
    Attention attn{nullptr};
    RmsNorm norm2{nullptr};
    SwiGlu mlp{nullptr};
};
TORCH_MODULE(DecoderBlock);

} // namespace tessera::gpu
