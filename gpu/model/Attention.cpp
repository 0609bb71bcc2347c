// SPDX-License-Identifier: Apache-2.0
#include "model/Attention.h"

#include <ATen/ATen.h>

#include <cmath>

namespace tessera::gpu {

namespace {

torch::nn::Linear linear(std::int64_t in, std::int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

} // namespace

AttentionImpl::AttentionImpl(const ModelConfig& config)
    : m_heads(config.nHeads)
    , m_kvHeads(config.nKvHeads)
    , m_headDim(config.headDim()) {
    const std::int64_t d = config.dModel;
    const std::int64_t kv = m_kvHeads * m_headDim;
    const std::int64_t out = config.codec == CodecKind::Subspace ? config.subspaceDim() : d;
    wq = register_module("wq", linear(d, d));
    wk = register_module("wk", linear(d, kv));
    wv = register_module("wv", linear(d, kv));
    wo = register_module("wo", linear(d, out));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const BlockContext& context) {
    const std::int64_t batch = x.size(0);
    const std::int64_t length = x.size(1);
    const std::int64_t group = m_heads / m_kvHeads;
    const auto q = context.rope->apply(wq(x).view({batch, length, m_heads, m_headDim}));
    const auto k = context.rope->apply(wk(x).view({batch, length, m_kvHeads, m_headDim}));
    const auto v = wv(x).view({batch, length, m_kvHeads, m_headDim});

#if TESSERA_FUSED_ATTENTION
    // LibTorch 2's fused attention (flash or memory-efficient kernels on a GPU, a blocked kernel on the
    // CPU): causal, scaled by 1/√head_dim, the T×T scores never in memory. Head h = kv·group + g reads kv
    // head h / group: each kv head's keys and values are expanded to its group of query heads.
    const auto perHead = [&](const torch::Tensor& t) {
        return t.unsqueeze(3)
            .expand({batch, length, m_kvHeads, group, m_headDim})
            .reshape({batch, length, m_heads, m_headDim})
            .transpose(1, 2);
    };
    const auto fused =
        at::scaled_dot_product_attention(q.transpose(1, 2), perHead(k), perHead(v), {}, 0.0, true);
    return wo(fused.transpose(1, 2).reshape({batch, length, m_heads * m_headDim}));
#else

    // The `group` query heads that share a kv head become one matrix of group·T rows (head
    // h = kv·group + g reads kv head h / group), so keys and values are never repeated.
    const auto q3 = q.view({batch, length, m_kvHeads, group, m_headDim})
                        .permute({0, 2, 3, 1, 4})
                        .reshape({batch * m_kvHeads, group * length, m_headDim});
    const auto k3 = k.transpose(1, 2).reshape({batch * m_kvHeads, length, m_headDim});
    const auto v3 = v.transpose(1, 2).reshape({batch * m_kvHeads, length, m_headDim});

    // No fused attention in LibTorch 1.13's C++ API: mask + scaled scores in one baddbmm.
    const auto scores = torch::baddbmm(context.causalMask, q3, k3.transpose(1, 2), 1.0,
                                       1.0 / std::sqrt(static_cast<double>(m_headDim)));
    const auto heads = torch::bmm(torch::softmax(scores, -1), v3)
                           .view({batch, m_kvHeads, group, length, m_headDim})
                           .permute({0, 3, 1, 2, 4})
                           .reshape({batch, length, m_heads * m_headDim});
    return wo(heads);
#endif
}

} // namespace tessera::gpu
