// SPDX-License-Identifier: Apache-2.0
#include "model/SwiGlu.h"

namespace tessera::gpu {

SwiGluImpl::SwiGluImpl(const ModelConfig& config) {
    const std::int64_t d = config.dModel;
    const std::int64_t hidden = config.ffnHidden;
    const std::int64_t out = config.codec == CodecKind::Subspace ? config.subspaceDim() : d;
    auto linear = [](std::int64_t in, std::int64_t o) {
        return torch::nn::Linear(torch::nn::LinearOptions(in, o).bias(false));
    };
    w1 = register_module("w1", linear(d, hidden));
    w2 = register_module("w2", linear(hidden, out));
    w3 = register_module("w3", linear(d, hidden));
}

torch::Tensor SwiGluImpl::forward(const torch::Tensor& x) {
    return w2(torch::silu(w1(x)) * w3(x));
}

} // namespace tessera::gpu
