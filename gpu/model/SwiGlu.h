// SPDX-License-Identifier: Apache-2.0
#pragma once
// SwiGlu: the gated feed-forward network, w2(silu(w1·x) ⊙ w3·x). Internal to gpu/ (includes
// torch).

#include "base/ModelConfig.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace tessera::gpu {

class SwiGluImpl : public torch::nn::Module {
public:
    // w1, w3: d -> ffnHidden; w2: ffnHidden -> d, or k in a subspace run.
    explicit SwiGluImpl(const ModelConfig& config);

    // x: [B, T, d] in the compute dtype -> [B, T, d or k], compute dtype.
    torch::Tensor forward(const torch::Tensor& x);

    torch::nn::Linear w1{nullptr}, w2{nullptr}, w3{nullptr};
};
TORCH_MODULE(SwiGlu);

} // namespace tessera::gpu
