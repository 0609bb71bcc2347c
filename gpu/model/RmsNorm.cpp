// SPDX-License-Identifier: Apache-2.0
#include "model/RmsNorm.h"

namespace tessera::gpu {

RmsNormImpl::RmsNormImpl(std::int64_t dim, double eps, bool gain)
    : m_eps(eps) {
    if (gain)
        weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x, torch::ScalarType dtype) {
    auto y = x * torch::rsqrt(x.square().mean(-1, /*keepdim=*/true) + m_eps);
    if (weight.defined())
        y = y * weight; // a bf16 gain promotes to fp32 here
    return y.to(dtype);
}

} // namespace tessera::gpu
