// SPDX-License-Identifier: Apache-2.0
// bench_sparta: a SPARTA round's bookkeeping at a stage's real size (issue 19: "partition indexing
// at 1B+"), side by side in one run — train/Sparta's block walk (one torch call per 256-value block:
// ~213,000 in an 8b middle stage's partition) against runs of whole blocks (one index_select /
// index_add_ per parameter, the alternative tried). Dealing the partitions, gathering one
// partition, applying its delta; both give the same values (checked). Weights are zeros of the
// middle stage's shapes (fp32, on the CPU).
//
// usage: bench_sparta [PRESET]   (default 8b: 4.4 GB of weights)
#include "MiddleStage.h"
#include "train/Sparta.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>

using namespace tessera::gpu;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// One partition as runs of whole blocks: per run, its parameter and the blocks' indices (a
// parameter's shorter last block, if dealt here, stays a slice of its own).
struct Runs {
    std::vector<std::pair<std::size_t, torch::Tensor>> runs;
    std::vector<SpartaSlice> shortBlocks; // gathered after the runs (the order differs from Sparta's)
};

Runs runsOf(const std::vector<SpartaSlice>& slices) {
    Runs out;
    std::vector<std::int64_t> run;
    std::size_t parameter = 0;
    const auto flush = [&] {
        if (!run.empty())
            out.runs.emplace_back(parameter, torch::tensor(run, torch::kLong));
        run.clear();
    };
    for (const SpartaSlice& s : slices) {
        if (s.parameter != parameter)
            flush();
        parameter = s.parameter;
        if (s.length == Sparta::kBlock)
            run.push_back(s.begin / Sparta::kBlock);
        else
            out.shortBlocks.push_back(s);
    }
    flush();
    return out;
}

torch::Tensor blockRows(const torch::Tensor& t) {
    const torch::Tensor flat = t.view({-1});
    const std::int64_t whole = flat.numel() / Sparta::kBlock;
    return flat.narrow(0, 0, whole * Sparta::kBlock).view({whole, Sparta::kBlock});
}

} // namespace

int main(int argc, char** argv) {
    const std::string preset = argc > 1 ? argv[1] : "8b";
    const auto config = ModelConfig::preset(preset);
    if (!config) {
        std::fprintf(stderr, "bench_sparta: %s\n", config.message().c_str());
        return 2;
    }
    torch::NoGradGuard noGrad;
    Sparta::NamedTensors parameters;
    std::vector<std::pair<std::string, std::int64_t>> sizes;
    std::int64_t total = 0;
    for (const auto& shape : middleStageShapes(*config, middleStageBlocks(*config))) {
        parameters.emplace_back("blocks." + std::to_string(parameters.size()), torch::zeros(shape));
        sizes.emplace_back(parameters.back().first, parameters.back().second.numel());
        total += sizes.back().second;
    }
    const int partitions = Sparta::kPartitions;
    std::printf(
        "SPARTA at a %s middle stage: %lld parameters (%.1f GB fp32), %d partitions, blocks of %lld\n",
        preset.c_str(), static_cast<long long>(total), double(total) * 4 / 1e9, partitions,
        static_cast<long long>(Sparta::kBlock));

    // train/Sparta: every partition's slice list, one torch call per slice.
    auto start = Clock::now();
    Sparta sparta(parameters, 42, partitions);
    const double walkDeal = secondsSince(start);
    // Runs of whole blocks: partition 0 alone dealt (one shuffle per parameter), then one call per run.
    start = Clock::now();
    const Runs runs = runsOf(spartaPartition(sizes, 42, partitions, 0));
    const double runsDeal = secondsSince(start);
    const std::int64_t size = sparta.partitionSize(0);
    const torch::Tensor average = torch::full({size}, 0.5f), snapshot = torch::zeros({size});

    // Twice each, alternating, so neither pays alone for first touches; the second pair is printed.
    double walkGatherSeconds = 0, walkApply = 0, runsGatherSeconds = 0, runsApply = 0;
    torch::Tensor walkGather, runsGather;
    for (int pass = 0; pass < 2; ++pass) {
        start = Clock::now();
        walkGather = sparta.gather(0);
        walkGatherSeconds = secondsSince(start);
        start = Clock::now();
        sparta.applyDelta(0, average, snapshot);
        walkApply = secondsSince(start);

        start = Clock::now();
        std::vector<torch::Tensor> parts;
        for (const auto& [p, blocks] : runs.runs)
            parts.push_back(blockRows(parameters[p].second).index_select(0, blocks).reshape({-1}));
        for (const SpartaSlice& s : runs.shortBlocks)
            parts.push_back(parameters[s.parameter].second.view({-1}).narrow(0, s.begin, s.length));
        runsGather = torch::cat(parts);
        runsGatherSeconds = secondsSince(start);
        start = Clock::now();
        const torch::Tensor delta = average - snapshot; // as Sparta::applyDelta makes it
        std::int64_t offset = 0;
        for (const auto& [p, blocks] : runs.runs) {
            const std::int64_t n = blocks.numel();
            blockRows(parameters[p].second)
                .index_add_(0, blocks, delta.narrow(0, offset, n * Sparta::kBlock).view({n, Sparta::kBlock}));
            offset += n * Sparta::kBlock;
        }
        for (const SpartaSlice& s : runs.shortBlocks) {
            parameters[s.parameter]
                .second.view({-1})
                .narrow(0, s.begin, s.length)
                .add_(delta.narrow(0, offset, s.length));
            offset += s.length;
        }
        runsApply = secondsSince(start);
    }
    // Four deltas of 0.5 (the weights are shared): partition 0 now holds 2.0 everywhere; the second
    // pass gathered 1.0 (walk) and 1.5 (runs).
    const bool same = runsGather.numel() == size &&
                      torch::equal(walkGather, torch::full_like(walkGather, 1.0f)) &&
                      torch::equal(runsGather, torch::full_like(runsGather, 1.5f)) &&
                      torch::equal(sparta.gather(0), torch::full_like(walkGather, 2.0f));

    std::printf("partition 0: %lld values (%.0f MB)\n", static_cast<long long>(walkGather.numel()),
                double(walkGather.numel()) * 4 / 1e6);
    std::printf("%-28s %12s %12s %8s\n", "", "block walk", "block runs", "ratio");
    std::printf("%-28s %11.2fs %11.2fs %7.1fx\n", "deal (walk: all; runs: one)", walkDeal, runsDeal,
                walkDeal / runsDeal);
    std::printf("%-28s %11.2fs %11.2fs %7.1fx\n", "gather partition 0", walkGatherSeconds, runsGatherSeconds,
                walkGatherSeconds / runsGatherSeconds);
    std::printf("%-28s %11.2fs %11.2fs %7.1fx\n", "apply partition 0's delta", walkApply, runsApply,
                walkApply / runsApply);
    std::printf("same values: %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
}
