// SPDX-License-Identifier: Apache-2.0
// tessera-sim: the swarm in one process (see gpu/train/SwarmSimulator.h). Prints the loss as
// it goes and the final held-out loss last; --csv writes the curve.
#include "base/ModelConfig.h"
#include "train/SwarmSimulator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

using namespace tessera::gpu;

namespace {

int usage(std::ostream& out, int code) {
    out << "usage: tessera-sim [--preset tiny|small|8b] [--stages S] [--replicas R]\n"
           "                   [--codec none|int8|subspace] [--ratio K] [--steps N] [--seed X]\n"
           "                   [--data SPEC] [--csv FILE] [--microbatches M] [--batch B] [--seq T]\n"
           "                   [--lr LR] [--warmup-steps N] [--lr-decay none|cosine|linear]\n"
           "                   [--min-lr-ratio X] [--clip-norm X] [--rank R] [--bits B] [--memory-decay X]\n"
           "                   [--freeze-variance-after N] [--dense-steps N] [--dense-every K]\n"
           "                   [--exchange-updates 1]\n"
           "                   [--routing-seed X] [--moment-bits 32|8]\n"
           "                   [--no-gradient-averaging] [--async [--delay D] [--look-ahead X]]\n"
           "                   [--eval-every N] [--no-averaging]\n"
           "                   [--average-every N] [--partitions P]  (SPARTA: 1/P of the weights every N "
           "steps;\n"
           "                   default 20 and 20)\n"
           "  SPEC: synthetic[:order=N,branch=M,symbols=V,tokens=K] | text:PATH | tokens16:PATH | "
           "tokens32:PATH | dataset:DIR (tessera-data build)\n"
           "  Gradients are averaged across a stage's replicas every step (rank R low-rank exchange with\n"
           "  error feedback; default 0: dense and exact; --bits 8 or 4: dense in that many bits a\n"
           "  value, error feedback on both sides); the decay ends at --steps.\n"
           "  --async: each step's update lands one step late (--delay D: D steps late), as in the\n"
           "  asynchronous pipeline; the weights then run ahead of the master weights by X times the\n"
           "  last update (default 0).\n"
           "  --stages 1 --replicas 1 --codec none --rank 0 is the centralized baseline.\n";
    return code;
}

bool parseInt(const char* text, long long& out) {
    char* end = nullptr;
    out = std::strtoll(text, &end, 10);
    return end && *end == '\0' && end != text;
}

} // namespace

int main(int argc, char** argv) {
    std::string preset = "tiny", codec = "none", csvPath;
    long long stages = -1, ratio = -1, steps = 200, evalEvery = 20, momentBits = 32;
    SimOptions options;
    double lr = -1;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        long long n = 0;
        const char* v = nullptr;
        if (arg == "--help" || arg == "-h")
            return usage(std::cout, 0);
        if (arg == "--no-averaging") {
            options.sparseAveraging = false;
            continue;
        }
        if (arg == "--async") {
            options.pipelineDelay = std::max(options.pipelineDelay, 1);
            continue;
        }
        if (arg == "--no-gradient-averaging") {
            options.gradientAveraging = false;
            continue;
        }
        if (!(v = value())) {
            std::cerr << "tessera-sim: " << arg << " needs a value\n";
            return usage(std::cerr, 2);
        }
        if (arg == "--preset")
            preset = v;
        else if (arg == "--codec")
            codec = v;
        else if (arg == "--data")
            options.data = v;
        else if (arg == "--csv")
            csvPath = v;
        else if (arg == "--lr")
            lr = std::atof(v);
        else if (arg == "--min-lr-ratio")
            options.schedule.minRatio = std::atof(v);
        else if (arg == "--memory-decay")
            options.memoryDecay = std::atof(v);
        else if (arg == "--delay")
            options.pipelineDelay = std::atoi(v);
        else if (arg == "--look-ahead")
            options.lookAhead = std::atof(v);
        else if (arg == "--clip-norm")
            options.optimizer.clipNorm = std::atof(v);
        else if (arg == "--lr-decay") {
            if (!parseDecay(v, options.schedule.decay)) {
                std::cerr << "tessera-sim: --lr-decay wants none, cosine or linear, got '" << v << "'\n";
                return 2;
            }
        } else if (!parseInt(v, n)) {
            std::cerr << "tessera-sim: " << arg << " wants an integer, got '" << v << "'\n";
            return 2;
        } else if (arg == "--stages")
            stages = n;
        else if (arg == "--replicas")
            options.replicas = static_cast<int>(n);
        else if (arg == "--ratio")
            ratio = n;
        else if (arg == "--steps")
            steps = n;
        else if (arg == "--seed")
            options.seed = static_cast<std::uint64_t>(n);
        else if (arg == "--microbatches")
            options.microbatchesPerStep = static_cast<int>(n);
        else if (arg == "--batch")
            options.batch = static_cast<int>(n);
        else if (arg == "--seq")
            options.seqLen = static_cast<int>(n);
        else if (arg == "--average-every")
            options.averagingInterval = static_cast<int>(n);
        else if (arg == "--partitions")
            options.partitions = static_cast<int>(n);
        else if (arg == "--warmup-steps")
            options.schedule.warmupSteps = n;
        else if (arg == "--rank")
            options.gradientRank = static_cast<int>(n);
        else if (arg == "--bits")
            options.gradientBits = static_cast<int>(n);
        else if (arg == "--routing-seed")
            options.routingSeed = static_cast<std::uint64_t>(n);
        else if (arg == "--dense-steps")
            options.denseSteps = static_cast<int>(n);
        else if (arg == "--dense-every")
            options.denseEvery = static_cast<int>(n);
        else if (arg == "--freeze-variance-after")
            options.freezeVarianceAfter = static_cast<int>(n);
        else if (arg == "--exchange-updates")
            options.exchangeUpdates = n != 0;
        else if (arg == "--eval-every")
            evalEvery = n;
        else if (arg == "--moment-bits")
            momentBits = n;
        else {
            std::cerr << "tessera-sim: unknown option " << arg << "\n";
            return usage(std::cerr, 2);
        }
    }
    auto config = ModelConfig::preset(preset);
    auto kind = parseCodec(codec);
    if (!config || !kind) {
        std::cerr << "tessera-sim: " << (!config ? config.message() : kind.message()) << "\n";
        return 2;
    }
    options.config = *config;
    options.config.codec = *kind;
    if (stages > 0)
        options.config.stages = static_cast<int>(stages);
    if (ratio > 0)
        options.config.subspaceRatio = static_cast<int>(ratio);
    options.config.momentBits = static_cast<int>(momentBits);
    if (lr > 0)
        options.optimizer.learningRate = options.schedule.peak = lr;
    options.schedule.decaySteps = steps;
    if (steps < 1) {
        std::cerr << "tessera-sim: --steps must be positive\n";
        return 2;
    }

    auto sim = SwarmSimulator::create(options);
    if (!sim) {
        std::cerr << "tessera-sim: " << sim.message() << "\n";
        return 1;
    }
    std::ofstream csv;
    if (!csvPath.empty()) {
        csv.open(csvPath);
        if (!csv) {
            std::cerr << "tessera-sim: cannot write " << csvPath << "\n";
            return 1;
        }
        csv << "step,tokens,train_loss,eval_loss,wire_bytes,seconds\n";
    }
    std::cout << "tessera-sim: " << (*sim)->describe() << "\n";
    if ((*sim)->entropyFloor() >= 0)
        std::printf("entropy floor of the data: %.4f nats/token\n", (*sim)->entropyFloor());
    const auto start = std::chrono::steady_clock::now();
    double evalLoss = (*sim)->evaluate();
    for (long long s = 1; s <= steps; ++s) {
        const SimStep r = (*sim)->step();
        const bool report = s % evalEvery == 0 || s == steps;
        if (report)
            evalLoss = (*sim)->evaluate();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (csv)
            csv << r.step << ',' << r.tokens << ',' << r.trainLoss << ','
                << (report ? std::to_string(evalLoss) : "") << ',' << r.wireBytes << ',' << seconds << '\n';
        if (report)
            std::printf("step %5lld  tokens %9lld  train %.4f  eval %.4f  wire %.1f KiB/step  %.1f s\n", s,
                        static_cast<long long>(r.tokens), r.trainLoss, evalLoss, r.wireBytes / 1024.0,
                        seconds);
        std::fflush(stdout);
    }
    std::printf("final loss %.4f\n", evalLoss);
    return 0;
}
