// SPDX-License-Identifier: Apache-2.0
#pragma once
// RmsNorm: root-mean-square normalisation of the fp32 residual stream, with a learned gain or
// gain-free (the subspace constraint). Internal to gpu/ (includes torch).

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace tessera::gpu {

class RmsNormImpl : public torch::nn::Module {
public:
    RmsNormImpl(std::int64_t dim, double eps, bool gain);

    // x: [..., dim] fp32. Normalises in fp32 and hands the result on in the compute dtype.
    torch::Tensor forward(const torch::Tensor& x, torch::ScalarType dtype);

    torch::Tensor weight; // [dim]; undefined when gain-free

private:
    double m_eps;
};
TORCH_MODULE(RmsNorm);

} // namespace tessera::gpu
