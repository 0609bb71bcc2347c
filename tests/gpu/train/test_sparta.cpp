// SPDX-License-Identifier: Apache-2.0
// SPARTA partitions: every weight averaged exactly once per 400 steps, 5% at a time, the same
// on every replica; the delta rule keeps progress made while an exchange ran.
#include "GpuTest.h"
#include "train/Sparta.h"

#include <torch/torch.h>

using namespace tessera::gpu;

namespace {

Sparta::NamedTensors parameters() {
    // Odd sizes: a tensor smaller than a block, one not a multiple of the block, a big one.
    return {{"norm.weight", torch::randn({100})},
            {"blocks.0.attn.wq.weight", torch::randn({64, 37})},
            {"blocks.0.mlp.w1.weight", torch::randn({384, 128})}};
}

} // namespace

TESSERA_TEST(everyWeightIsAveragedExactlyOncePer400Steps) {
    auto params = parameters();
    // Mark every element with its own id, then see which partitions hold which ids.
    std::int64_t total = 0;
    for (auto& [name, t] : params) {
        t.copy_(torch::arange(total, total + t.numel(), torch::kFloat).reshape(t.sizes()));
        total += t.numel();
    }
    Sparta sparta(params, 7);
    std::vector<int> seen(static_cast<std::size_t>(total), 0);
    int rounds = 0;
    for (std::int64_t step = 1; step <= 400; ++step) {
        if (!sparta.isAveragingStep(step))
            continue;
        ++rounds;
        const auto values = sparta.gather(sparta.partitionForStep(step));
        const auto* v = values.data_ptr<float>();
        for (std::int64_t i = 0; i < values.numel(); ++i)
            ++seen[static_cast<std::size_t>(v[i])];
    }
    CHECK_MSG(rounds == 20, rounds);
    for (std::size_t i = 0; i < seen.size(); ++i)
        CHECK_MSG(seen[i] == 1, "element " << i << " averaged " << seen[i] << " times");
}

TESSERA_TEST(partitionsAreFivePercentEach) {
    auto params = parameters();
    std::int64_t total = 0;
    for (auto& [name, t] : params)
        total += t.numel();
    Sparta sparta(params, 7);
    for (int p = 0; p < Sparta::kPartitions; ++p) {
        const double share = static_cast<double>(sparta.partitionSize(p)) / total;
        // Blocks are 256 elements: a partition is 5% give or take one block.
        CHECK_MSG(std::abs(share - 0.05) <= 256.0 / total + 1e-9, "partition " << p << " holds " << share);
    }
}

TESSERA_TEST(replicasWithTheSameSeedAgreeOnThePartitions) {
    auto a = parameters();
    auto b = parameters();
    for (std::size_t i = 0; i < a.size(); ++i)
        b[i].second.copy_(a[i].second);
    Sparta sa(a, 99), sb(b, 99), other(b, 100);
    CHECK(torch::equal(sa.gather(3), sb.gather(3)));
    CHECK(!torch::equal(sa.gather(3), other.gather(3)));
}

TESSERA_TEST(deltaRuleKeepsProgressMadeDuringTheExchange) {
    auto params = parameters();
    Sparta sparta(params, 1);
    const int p = 5;
    const auto snapshot = sparta.gather(p); // sent to the coordinator
    // While the exchange runs the replica keeps training: every weight moves by +1.
    for (auto& [name, t] : params)
        t.add_(1.0);
    const auto average = snapshot * 0.5; // what came back
    sparta.applyDelta(p, average, snapshot);
    // Result = average + local progress (+1), not the stale average alone.
    const auto expected = average + 1.0;
    CHECK(torch::allclose(sparta.gather(p), expected, 1e-5, 1e-6));
    // Weights outside the partition only carry the local progress.
    const auto other = sparta.gather(p + 1);
    CHECK(other.numel() > 0);
}

TESSERA_TEST(deltaOfTheWrongSizeIsRefused) {
    auto params = parameters();
    Sparta sparta(params, 1);
    bool threw = false;
    try {
        sparta.applyDelta(0, torch::zeros({3}), torch::zeros({3}));
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
}
