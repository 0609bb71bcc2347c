// SPDX-License-Identifier: Apache-2.0
#include "model/DecoderBlock.h"

namespace tessera::gpu {

DecoderBlockImpl::DecoderBlockImpl(const ModelConfig& config) {
    const bool gain = config.codec != CodecKind::Subspace;
    norm1 = register_module("norm1", RmsNorm(config.dModel, config.normEps, gain));
    attn = register_module("attn", Attention(config));
    norm2 = register_module("norm2", RmsNorm(config.dModel, config.normEps, gain));
    mlp = register_module("mlp", SwiGlu(config));
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const BlockContext& context) {
    const auto h = x + context.toResidual(attn(norm1(x, context.dtype), context));
    return h + context.toResidual(mlp(norm2(h, context.dtype)));
}

} // namespace tessera::gpu
