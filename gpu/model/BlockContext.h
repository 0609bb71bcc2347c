// SPDX-License-Identifier: Apache-2.0
#pragma once
// BlockContext: what every block of one forward pass shares, read-only: the rotary tables, the
// causal mask for this sequence length, the subspace basis and the compute dtype. Internal to
// gpu/ (includes torch).

#include "model/RotaryEmbedding.h"

#include <torch/types.h>
#include <torch/version.h>

// LibTorch 2 fuses attention (at::scaled_dot_product_attention: flash kernels on a GPU); Debian's 1.13
// has no such call, and the blocks compute masked scores with baddbmm there.
#if TORCH_VERSION_MAJOR >= 2
#define TESSERA_FUSED_ATTENTION 1
#else
#define TESSERA_FUSED_ATTENTION 0
#endif

namespace tessera::gpu {

struct BlockContext {
    const RotaryEmbedding* rope = nullptr;
    // [G·T, T] additive (0 or −inf), compute dtype; G = nHeads / nKvHeads. Undefined where attention is
    // fused (TESSERA_FUSED_ATTENTION): the kernel is told it is causal.
    torch::Tensor causalMask;
    torch::Tensor basisT; // Uᵀ [k, d] fp32; undefined without the subspace constraint
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
