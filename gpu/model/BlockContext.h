// SPDX-License-Identifier: Apache-2.0
#pragma once
// BlockContext: what every block of one forward pass shares, read-only: the rotary tables, the
// causal mask for this sequence length, the subspace basis and the compute dtype. Internal to
// gpu/ (includes torch).

#include "model/RotaryEmbedding.h"

#include <torch/types.h>

namespace tessera::gpu {

struct BlockContext {
    const RotaryEmbedding* rope = nullptr;
    torch::Tensor causalMask; // [G·T, T] additive (0 or −inf), compute dtype; G = nHeads / nKvHeads
    torch::Tensor basisT;     // Uᵀ [k, d] fp32; undefined without the subspace constraint
    torch::ScalarType dtype = torch::kFloat;

    // A block's output (compute dtype, d wide, or k wide in a subspace run) as an fp32 update of
    // the residual stream. The k coefficients are mapped by Uᵀ in fp32 so that the update lies
    // in span(U) to fp32 rounding whatever the compute dtype.
    torch::Tensor toResidual(const torch::Tensor& y) const {
        auto y32 = y.to(torch::kFloat);
        return basisT.defined() ? torch::matmul(y32, basisT) : y32;
    }
};

} // namespace tessera::gpu
