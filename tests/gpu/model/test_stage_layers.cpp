// SPDX-License-Identifier: Apache-2.0
// The decoder's layers against their definitions: RoPE makes attention scores depend on relative
// position only, grouped-query attention equals the textbook form with repeated kv heads, the
// model is causal, and RMSNorm hands on unit-RMS rows.
#include "GpuTest.h"
#include "model/Attention.h"
#include "model/RmsNorm.h"
#include "model/RotaryEmbedding.h"
#include "model/StageModel.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>

using namespace tessera::gpu;

namespace {

ModelConfig tiny() {
    auto config = ModelConfig::preset("tiny").value();
    config.stages = 1;
    return config;
}

} // namespace

TESSERA_TEST(ropeScoresDependOnRelativePositionOnly) {
    const auto config = tiny();
    const RotaryEmbedding rope(config, torch::kCPU, torch::kFloat);
    auto generator = at::detail::createCPUGenerator(3);
    const auto q = torch::randn({config.headDim()}, generator, torch::kDouble);
    const auto k = torch::randn({config.headDim()}, generator, torch::kDouble);
    // The same q at every position and the same k at every position: score(m, n) = f(m − n).
    const int length = 40;
    const auto qs = rope.apply(q.expand({1, length, 1, config.headDim()}).to(torch::kFloat)).squeeze();
    const auto ks = rope.apply(k.expand({1, length, 1, config.headDim()}).to(torch::kFloat)).squeeze();
    const auto scores = torch::matmul(qs, ks.t()).to(torch::kDouble);
    for (int shift : {1, 7, 23})
        for (int m = shift; m < length; m += 5) {
            const double a = scores[m][m - shift].item<double>();
            const double b = scores[shift][0].item<double>();
            CHECK_MSG(std::abs(a - b) < 1e-4 * std::abs(b) + 1e-4, "shift " << shift << " at " << m);
        }
    // Position 0 is not rotated; rotation keeps the norm.
    CHECK(torch::allclose(qs[0], q.to(torch::kFloat), 1e-6, 1e-6));
    CHECK(torch::allclose(qs.norm(2, 1), q.norm().to(torch::kFloat).expand({length}), 1e-5, 1e-5));
}

TESSERA_TEST(groupedQueryAttentionEqualsRepeatedKvHeads) {
    auto config = tiny();
    config.nHeads = 8;
    config.nKvHeads = 2;
    Attention attention(config);
    const RotaryEmbedding rope(config, torch::kCPU, torch::kFloat);
    const std::int64_t B = 2, T = 12, H = 8, KV = 2, hd = config.headDim();
    const auto mask =
        torch::full({T, T}, -std::numeric_limits<double>::infinity()).triu(1).repeat({H / KV, 1});
    const BlockContext context{&rope, mask, {}, torch::kFloat};
    const auto x = torch::randn({B, T, config.dModel}, at::detail::createCPUGenerator(4));
    torch::NoGradGuard noGrad;
    const auto ours = attention(x, context);

    const auto q = rope.apply(attention->wq(x).view({B, T, H, hd})).transpose(1, 2);
    const auto k =
        rope.apply(attention->wk(x).view({B, T, KV, hd})).repeat_interleave(H / KV, 2).transpose(1, 2);
    const auto v = attention->wv(x).view({B, T, KV, hd}).repeat_interleave(H / KV, 2).transpose(1, 2);
    const auto future = torch::ones({T, T}, torch::kBool).triu(1);
    const auto scores = (torch::matmul(q, k.transpose(2, 3)) / std::sqrt(double(hd)))
                            .masked_fill(future, -std::numeric_limits<double>::infinity());
    const auto heads = torch::matmul(torch::softmax(scores, -1), v).transpose(1, 2).reshape({B, T, H * hd});
    const auto reference = attention->wo(heads);
    CHECK_MSG(torch::allclose(ours, reference, 1e-5, 1e-6),
              "max |Δ| " << (ours - reference).abs().max().item<double>());
}

TESSERA_TEST(noPositionSeesTheFuture) {
    auto config = tiny();
    config.stages = 2;
    StageModel first(config, 0);
    auto ids = torch::randint(256, {1, 24}, at::detail::createCPUGenerator(5), torch::kLong);
    const auto before = first.forward(ids);
    ids[0][15] = (ids[0][15].item<std::int64_t>() + 1) % 256;
    const auto after = first.forward(ids);
    CHECK(torch::equal(before.narrow(1, 0, 15), after.narrow(1, 0, 15)));
    CHECK(!torch::equal(before.narrow(1, 15, 1), after.narrow(1, 15, 1)));
    CHECK(!torch::equal(before.narrow(1, 23, 1), after.narrow(1, 23, 1)));
}

TESSERA_TEST(rmsNormRowsHaveUnitRms) {
    RmsNorm norm(64, 1e-6, false);
    const auto x = torch::randn({3, 5, 64}, at::detail::createCPUGenerator(6)) * 7 + 2;
    torch::NoGradGuard noGrad;
    const auto y = norm(x, torch::kFloat);
    CHECK(torch::allclose(y.square().mean(-1), torch::ones({3, 5}), 1e-4, 1e-4));
    RmsNorm withGain(64, 1e-6, true);
    withGain->weight.fill_(2.0);
    CHECK(torch::allclose(withGain(x, torch::kFloat), 2 * y, 1e-5, 1e-5));
}
