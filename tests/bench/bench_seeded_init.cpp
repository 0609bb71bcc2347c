// SPDX-License-Identifier: Apache-2.0
// bench_seeded_init: the seeded generators on one thread and on every core, side by side — a parameter's
// seeded normal values (what every new run's shards and every engine's weights are made of), and the subspace
// codec's fixed-embedding rows of one 8b microbatch (made at every boundary a CPU node encodes). Given a
// folder, also one 8b stage's initial shard written there, and that stage's model built with its seeded
// weights, both ways.
//
//   bench_seeded_init                 the generators (a few seconds)
//   bench_seeded_init DIR [STAGE]     and 8b stage STAGE (default 1) — its shard (~4.4 GB in DIR,
//                                     removed after) and its StageModel (~4.4 GB of memory); minutes
#include "model/SeededInit.h"
#include "model/StageModel.h"
#include "model/Subspace.h"
#include "shard/InitialShards.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace tessera;
using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

double secondsOf(const std::function<void()>& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Times work(threads) on one thread, then on `threads` (LibTorch's intra-op count set to match),
// and prints both with the ratio; `units` of `unit` a run, shown per second when there are any.
void sideBySide(const char* what, int threads, double units, const char* unit,
                const std::function<void(int)>& work) {
    double seconds[2] = {};
    for (int pass = 0; pass < 2; ++pass) {
        const int n = pass == 0 ? 1 : threads;
        at::set_num_threads(n);
        seconds[pass] = secondsOf([&] { work(n); });
    }
    std::printf("%-40s", what);
    for (int pass = 0; pass < 2; ++pass) {
        std::printf(" | %2d thread%s %8.3f s", pass == 0 ? 1 : threads, pass == 0 ? " " : "s", seconds[pass]);
        if (units > 0)
            std::printf(" (%7.1f %s/s)", units / seconds[pass], unit);
    }
    std::printf(" | %.2fx\n", seconds[0] / seconds[1]);
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    // Every core (LibTorch's own default counts the cores it can tell apart: 1 on this VM).
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const ModelConfig eightB = ModelConfig::preset("8b").value();
    std::printf("bench_seeded_init: 1 thread against %d, each measured in turn\n\n", threads);

    constexpr std::int64_t kValues = 64ll << 20;
    std::vector<float> values(kValues); // zeroed: its pages are touched before either run is timed
    sideBySide("seeded normal values, 64 Mi", threads, kValues / 1e6, "M", [&](int n) {
        fillSeededNormal(values.data(), kValues, 0, eightB.seed, "blocks.0.attn.wq.weight", 0.02, n);
    });
    const torch::Tensor ids = torch::randint(eightB.vocabSize, {4096}, torch::kLong);
    sideBySide("fixed-embedding rows, 4096 tokens x 4096", threads, 4096, "tokens",
               [&](int) { (void)fixedEmbeddingRows(eightB, ids); });

    if (argc < 2)
        return 0;
    const fs::path dir = argv[1];
    const int stage = argc > 2 ? std::stoi(argv[2]) : 1;
    std::printf("\n8b stage %d\n", stage);
    double shardBytes = 0;
    sideBySide("initial shard made, hashed and written", threads, 0, "", [&](int n) {
        Result<ShardManifest> written = writeInitialShard(eightB, stage, dir, 0, n);
        if (!written) {
            std::fprintf(stderr, "%s\n", written.error().message.c_str());
            std::exit(1);
        }
        shardBytes = static_cast<double>(fs::file_size(dir / stageShardFileName(stage, 0)));
        fs::remove(dir / stageShardFileName(stage, 0));
    });
    std::printf("  (%.2f GB a shard)\n", shardBytes / 1e9);
    sideBySide("StageModel with its seeded weights", threads, 0, "",
               [&](int) { StageModel model(eightB, stage); });
    return 0;
}
