// SPDX-License-Identifier: Apache-2.0
// bench_sparta: a SPARTA round's bookkeeping at a stage's real size (issue 19: "partition indexing
// at 1B+"), side by side in one run — the block walk train/Sparta did until session 7 (one torch
// call per 256-value block: ~213,000 in an 8b middle stage's partition) against train/Sparta's runs
// of whole blocks (one index_select / index_add_ per parameter). Dealing the partitions, gathering
// one partition, applying its delta; both give the same values (checked). Weights are zeros of the
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

    // The block walk (train/Sparta until session 7): every partition's slice list, one call per slice.
    auto start = Clock::now();
    const std::vector<std::vector<SpartaSlice>> slices = dealSpartaPartitions(sizes, 42, partitions);
    const double walkDeal = secondsSince(start);
    // train/Sparta: every partition dealt one at a time into runs of whole blocks.
    start = Clock::now();
    Sparta sparta(parameters, 42, partitions);
    const double runsDeal = secondsSince(start);
    const std::int64_t size = sparta.partitionSize(0);
    const torch::Tensor average = torch::full({size}, 0.5f), snapshot = torch::zeros({size});

    // Twice each, alternating, so neither pays alone for first touches; the second pair is printed.
    double walkGatherSeconds = 0, walkApply = 0, runsGatherSeconds = 0, runsApply = 0;
    bool same = true;
    for (int pass = 0; pass < 2; ++pass) {
        start = Clock::now();
        std::vector<torch::Tensor> parts;
        for (const SpartaSlice& s : slices[0])
            parts.push_back(parameters[s.parameter].second.view({-1}).narrow(0, s.begin, s.length));
        const torch::Tensor walkGather = torch::cat(parts);
        parts.clear();
        walkGatherSeconds = secondsSince(start);
        start = Clock::now();
        const torch::Tensor delta = average - snapshot; // as Sparta::applyDelta makes it
        std::int64_t offset = 0;
        for (const SpartaSlice& s : slices[0]) {
            parameters[s.parameter]
                .second.view({-1})
                .narrow(0, s.begin, s.length)
                .add_(delta.narrow(0, offset, s.length));
            offset += s.length;
        }
        walkApply = secondsSince(start);

        start = Clock::now();
        const torch::Tensor runsGather = sparta.gather(0);
        runsGatherSeconds = secondsSince(start);
        start = Clock::now();
        sparta.applyDelta(0, average, snapshot);
        runsApply = secondsSince(start);
        // The weights are shared: the walk's gather saw 2·pass deltas of 0.5, the runs' one more.
        same = same && torch::equal(walkGather, torch::full({size}, 1.0f * float(pass))) &&
               torch::equal(runsGather, torch::full({size}, 1.0f * float(pass) + 0.5f));
    }
    same = same && torch::equal(sparta.gather(0), torch::full({size}, 2.0f));

    std::printf("partition 0: %lld values (%.0f MB)\n", static_cast<long long>(size), double(size) * 4 / 1e6);
    std::printf("%-28s %12s %12s %8s\n", "", "block walk", "block runs", "ratio");
    std::printf("%-28s %11.2fs %11.2fs %7.1fx\n", "deal every partition", walkDeal, runsDeal,
                walkDeal / runsDeal);
    std::printf("%-28s %11.2fs %11.2fs %7.1fx\n", "gather partition 0", walkGatherSeconds, runsGatherSeconds,
                walkGatherSeconds / runsGatherSeconds);
    std::printf("%-28s %11.2fs %11.2fs %7.1fx\n", "apply partition 0's delta", walkApply, runsApply,
                walkApply / runsApply);
    std::printf("same values: %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
}
