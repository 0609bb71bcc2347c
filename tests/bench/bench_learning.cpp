// SPDX-License-Identifier: Apache-2.0
// bench_learning: does a split, compressed, averaged swarm learn as one machine does? Runs the
// in-process simulator for the centralized baseline and S=4 × R=3 swarms with each mechanism added
// in turn (no gradient averaging — the first wave's swarm —, gradient averaging alone, + SPARTA
// with the exchange in fp32, 8 bits (the coordinator's default) or 4, + the subspace codec, + the
// low-rank gradient exchange, + the asynchronous pipeline with and without look-ahead) on the same
// tokens and seed, side by side
// (two at a time, one thread each), and prints final held-out losses and tokens-to-target. Writes
// one CSV per run and, when gnuplot is installed, a PNG plot.
//
// usage: bench_learning [STEPS] [OUTDIR] [RUNS]   RUNS: "all" (default), "long" (centralized and
// the default swarm, none and subspace 8x: for 2,000 steps), "long-none" (without the subspace
// row: the two runs side by side, half the time on two cores) or "long-subspace" (centralized and
// the subspace row side by side)
#include "train/SwarmSimulator.h"

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace tessera::gpu;

namespace {

struct Run {
    std::string label;
    int stages, replicas;
    CodecKind codec;
    int ratio;
    bool gradientAveraging = true;
    bool sparta = true;
    int rank = 0;
    int pipelineDelay = 0; // 1: the asynchronous pipeline (updates land a step late)
    double lookAhead = 0;
    std::vector<std::pair<std::int64_t, double>> curve = {}; // tokens, held-out loss
    int bits = 32;                                           // the exchange's (the coordinator's default: 8)
    double finalLoss = 0;
    double seconds = 0;
    double wireBytesPerToken = 0;
    double spread = 0; // largest relative difference between two replicas of a stage at the end
};

std::int64_t tokensToReach(const Run& run, double target) {
    for (const auto& [tokens, loss] : run.curve)
        if (loss <= target)
            return tokens;
    return -1;
}

} // namespace

int main(int argc, char** argv) {
    const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
    const std::filesystem::path outDir = argc > 2 ? argv[2] : "bench-learning";
    std::filesystem::create_directories(outDir);
    const int evalEvery = 10;

    const std::string which = argc > 3 ? argv[3] : "all";
    // Designated: a field left out keeps its default (the exchange in fp32, synchronous, no look-ahead).
    using enum CodecKind;
    std::vector<Run> runs = {{.label = "centralized (S=1 R=1 none)",
                              .stages = 1,
                              .replicas = 1,
                              .codec = None,
                              .ratio = 8,
                              .sparta = false}};
    const auto swarm = [](std::string label, CodecKind codec) {
        return Run{.label = std::move(label), .stages = 4, .replicas = 3, .codec = codec, .ratio = 8};
    };
    const auto with = [](Run run, auto&& change) {
        change(run);
        return run;
    };
    if (which == "long" || which == "long-none")
        runs.push_back(with(swarm("swarm S=4 R=3 none (default)", None), [](Run& r) { r.bits = 8; }));
    if (which == "long" || which == "long-subspace") {
        runs.push_back(
            with(swarm("swarm S=4 R=3 subspace 8x (default)", Subspace), [](Run& r) { r.bits = 8; }));
    } else if (which != "long-none") {
        runs.push_back(with(swarm("S4R3 none: SPARTA only (1st wave)", None),
                            [](Run& r) { r.gradientAveraging = false; }));
        runs.push_back(with(swarm("S4R3 none: grad avg", None), [](Run& r) { r.sparta = false; }));
        runs.push_back(swarm("S4R3 none: grad avg + SPARTA, fp32 exchange", None));
        runs.push_back(
            with(swarm("S4R3 none: grad avg + SPARTA, 8-bit (default)", None), [](Run& r) { r.bits = 8; }));
        runs.push_back(with(swarm("S4R3 none: + 4-bit exchange", None), [](Run& r) { r.bits = 4; }));
        runs.push_back(swarm("S4R3 subspace 8x: grad avg + SPARTA", Subspace));
        runs.push_back(with(swarm("S4R3 none: + rank-16 exchange", None), [](Run& r) { r.rank = 16; }));
        runs.push_back(with(swarm("S4R3 none: + rank-4 exchange", None), [](Run& r) { r.rank = 4; }));
        runs.push_back(with(swarm("S4R3 none: + async pipeline, no correction", None),
                            [](Run& r) { r.pipelineDelay = 1; }));
        runs.push_back(with(swarm("S4R3 none: + async pipeline, look-ahead 2", None), [](Run& r) {
            r.pipelineDelay = 1;
            r.lookAhead = 2.0;
        }));
    }
    // Side by side, one thread each: as many at once as there are cores.
    torch::set_num_threads(1);
    double floor = -1;
    std::mutex lock;
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    const auto worker = [&] {
        for (std::size_t i = next++; i < runs.size(); i = next++) {
            Run& run = runs[i];
            SimOptions options;
            options.config = *ModelConfig::preset("tiny");
            options.config.stages = run.stages;
            options.config.codec = run.codec;
            options.config.subspaceRatio = run.ratio;
            options.replicas = run.replicas;
            options.seed = 42;
            options.gradientAveraging = run.gradientAveraging;
            options.sparseAveraging = run.sparta;
            options.gradientRank = run.rank;
            options.gradientBits = run.bits;
            options.pipelineDelay = run.pipelineDelay;
            options.lookAhead = run.lookAhead;
            auto sim = SwarmSimulator::create(options);
            if (!sim) {
                std::fprintf(stderr, "%s: %s\n", run.label.c_str(), sim.message().c_str());
                failed = true;
                return;
            }
            {
                std::lock_guard<std::mutex> guard(lock);
                floor = (*sim)->entropyFloor();
                std::fprintf(stderr, "%s: %s\n", run.label.c_str(), (*sim)->describe().c_str());
            }
            const auto start = std::chrono::steady_clock::now();
            std::int64_t wire = 0, tokens = 0;
            run.curve.emplace_back(0, (*sim)->evaluate());
            for (int s = 1; s <= steps; ++s) {
                const SimStep r = (*sim)->step();
                wire += r.wireBytes;
                tokens = r.tokens;
                if (s % evalEvery == 0 || s == steps) {
                    run.curve.emplace_back(r.tokens, (*sim)->evaluate());
                    std::lock_guard<std::mutex> guard(lock);
                    std::fprintf(stderr, "  %s: step %d eval %.4f\n", run.label.c_str(), s,
                                 run.curve.back().second);
                }
            }
            run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            run.finalLoss = run.curve.back().second;
            run.wireBytesPerToken = tokens ? static_cast<double>(wire) / tokens : 0;
            run.spread = (*sim)->replicaSpread();
            std::ofstream csv(outDir / (std::to_string(i) + ".csv"));
            csv << "tokens,eval_loss\n";
            for (const auto& [t, l] : run.curve)
                csv << t << ',' << l << '\n';
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::max(1u, std::min(2u, std::thread::hardware_concurrency())); ++t)
        threads.emplace_back(worker);
    for (auto& t : threads)
        t.join();
    if (failed)
        return 1;

    const Run& base = runs.front();
    // Target: within 10% of the way from the start to the baseline's final loss, i.e. the
    // baseline's loss at 90% of its progress.
    const double target = base.curve.front().second - 0.9 * (base.curve.front().second - base.finalLoss);
    std::printf("tiny preset, %d steps of 8 microbatches x 8 x 64 tokens, synthetic order-2 corpus "
                "(entropy floor %.4f nats/token), seed 42; AdamW lr 3e-3, warm-up 20, global clip 1.0;\n"
                "grad avg: replicas average their gradients every step (dense unless a rank is given); "
                "SPARTA: 5%% of the weights every 20 steps\n\n",
                steps, floor);
    std::printf("%-40s %8s %10s %16s %10s %12s %12s %7s\n", "run", "final", "vs central", "tokens to target",
                "vs central", "wire B/token", "replica diff", "time s");
    const std::int64_t baseTokens = tokensToReach(base, target);
    for (const Run& run : runs) {
        const std::int64_t t = tokensToReach(run, target);
        char reach[32] = "not reached", reachRatio[32] = "-";
        if (t >= 0) {
            std::snprintf(reach, sizeof reach, "%lld", static_cast<long long>(t));
            if (baseTokens > 0)
                std::snprintf(reachRatio, sizeof reachRatio, "%.2fx", static_cast<double>(t) / baseTokens);
        }
        std::printf("%-40s %8.4f %9.1f%% %16s %10s %12.1f %12.2e %7.0f\n", run.label.c_str(), run.finalLoss,
                    100.0 * (run.finalLoss - base.finalLoss) / base.finalLoss, reach, reachRatio,
                    run.wireBytesPerToken, run.spread, run.seconds);
    }
    std::printf("\ntarget loss %.4f (90%% of the centralized run's progress)\n", target);

    // The plot, when gnuplot is there.
    std::ofstream script(outDir / "plot.gp");
    script << "set terminal png size 900,560\nset output '" << (outDir / "learning.png").string() << "'\n"
           << "set datafile separator ','\nset key top right\nset grid\n"
           << "set xlabel 'tokens'\nset ylabel 'held-out loss (nats/token)'\n"
           << "set title 'tiny model: centralized vs 4-stage x 3-replica swarm'\nplot ";
    for (std::size_t i = 0; i < runs.size(); ++i)
        script << "'" << (outDir / (std::to_string(i) + ".csv")).string()
               << "' every ::1 using 1:2 with lines lw 2 title '" << runs[i].label << "', ";
    script << floor << " with lines dt 2 lc rgb 'gray' title 'entropy floor'\n";
    script.close();
    const std::string plot = "gnuplot " + (outDir / "plot.gp").string() + " 2>/dev/null";
    if (std::system(plot.c_str()) == 0)
        std::printf("plot: %s\n", (outDir / "learning.png").string().c_str());
    else
        std::printf("plot: gnuplot not available; CSVs in %s\n", outDir.string().c_str());
    return 0;
}
