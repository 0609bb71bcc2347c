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
#include <map>
#include <optional>
#include <string>
#include <string_view>

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

// What the command line asks for: the simulator's options, and what main does around them.
struct SimArguments {
    std::string preset = "tiny", codec = "none", csvPath;
    long long stages = -1, ratio = -1, steps = 200, evalEvery = 20, momentBits = 32;
    double lr = -1;
    SimOptions options;
};

// The options without a value.
const std::map<std::string_view, void (*)(SimArguments&)> kFlags{
    {"--no-averaging", [](SimArguments& a) { a.options.sparseAveraging = false; }},
    {"--async", [](SimArguments& a) { a.options.pipelineDelay = std::max(a.options.pipelineDelay, 1); }},
    {"--no-gradient-averaging", [](SimArguments& a) { a.options.gradientAveraging = false; }},
};

// The options whose value is taken as written (a name, a path or a real number).
const std::map<std::string_view, void (*)(SimArguments&, const char*)> kTextOptions{
    {"--preset", [](SimArguments& a, const char* v) { a.preset = v; }},
    {"--codec", [](SimArguments& a, const char* v) { a.codec = v; }},
    {"--data", [](SimArguments& a, const char* v) { a.options.data = v; }},
    {"--csv", [](SimArguments& a, const char* v) { a.csvPath = v; }},
    {"--lr", [](SimArguments& a, const char* v) { a.lr = std::atof(v); }},
    {"--min-lr-ratio", [](SimArguments& a, const char* v) { a.options.schedule.minRatio = std::atof(v); }},
    {"--memory-decay", [](SimArguments& a, const char* v) { a.options.memoryDecay = std::atof(v); }},
    {"--delay", [](SimArguments& a, const char* v) { a.options.pipelineDelay = std::atoi(v); }},
    {"--look-ahead", [](SimArguments& a, const char* v) { a.options.lookAhead = std::atof(v); }},
    {"--clip-norm", [](SimArguments& a, const char* v) { a.options.optimizer.clipNorm = std::atof(v); }},
};

// The options whose value must be an integer.
const std::map<std::string_view, void (*)(SimArguments&, long long)> kIntegerOptions{
    {"--stages", [](SimArguments& a, long long n) { a.stages = n; }},
    {"--replicas", [](SimArguments& a, long long n) { a.options.replicas = static_cast<int>(n); }},
    {"--ratio", [](SimArguments& a, long long n) { a.ratio = n; }},
    {"--steps", [](SimArguments& a, long long n) { a.steps = n; }},
    {"--seed", [](SimArguments& a, long long n) { a.options.seed = static_cast<std::uint64_t>(n); }},
    {"--microbatches",
     [](SimArguments& a, long long n) { a.options.microbatchesPerStep = static_cast<int>(n); }},
    {"--batch", [](SimArguments& a, long long n) { a.options.batch = static_cast<int>(n); }},
    {"--seq", [](SimArguments& a, long long n) { a.options.seqLen = static_cast<int>(n); }},
    {"--average-every",
     [](SimArguments& a, long long n) { a.options.averagingInterval = static_cast<int>(n); }},
    {"--partitions", [](SimArguments& a, long long n) { a.options.partitions = static_cast<int>(n); }},
    {"--warmup-steps", [](SimArguments& a, long long n) { a.options.schedule.warmupSteps = n; }},
    {"--rank", [](SimArguments& a, long long n) { a.options.gradientRank = static_cast<int>(n); }},
    {"--bits", [](SimArguments& a, long long n) { a.options.gradientBits = static_cast<int>(n); }},
    {"--routing-seed",
     [](SimArguments& a, long long n) { a.options.routingSeed = static_cast<std::uint64_t>(n); }},
    {"--dense-steps", [](SimArguments& a, long long n) { a.options.denseSteps = static_cast<int>(n); }},
    {"--dense-every", [](SimArguments& a, long long n) { a.options.denseEvery = static_cast<int>(n); }},
    {"--freeze-variance-after",
     [](SimArguments& a, long long n) { a.options.freezeVarianceAfter = static_cast<int>(n); }},
    {"--exchange-updates", [](SimArguments& a, long long n) { a.options.exchangeUpdates = n != 0; }},
    {"--eval-every", [](SimArguments& a, long long n) { a.evalEvery = n; }},
    {"--moment-bits", [](SimArguments& a, long long n) { a.momentBits = n; }},
};

// Applies one option and its value v; the exit code when either is refused.
std::optional<int> applyValue(SimArguments& a, const std::string& arg, const char* v) {
    if (const auto text = kTextOptions.find(arg); text != kTextOptions.end()) {
        text->second(a, v);
        return std::nullopt;
    }
    if (arg == "--lr-decay") {
        if (parseDecay(v, a.options.schedule.decay))
            return std::nullopt;
        std::cerr << "tessera-sim: --lr-decay wants none, cosine or linear, got '" << v << "'\n";
        return 2;
    }
    long long n = 0;
    if (!parseInt(v, n)) {
        std::cerr << "tessera-sim: " << arg << " wants an integer, got '" << v << "'\n";
        return 2;
    }
    if (const auto integer = kIntegerOptions.find(arg); integer != kIntegerOptions.end()) {
        integer->second(a, n);
        return std::nullopt;
    }
    std::cerr << "tessera-sim: unknown option " << arg << "\n";
    return usage(std::cerr, 2);
}

// Reads the command line into `a`; the exit code when main is done (--help, or a usage error).
std::optional<int> parseArguments(int argc, char** argv, SimArguments& a) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h")
            return usage(std::cout, 0);
        if (const auto flag = kFlags.find(arg); flag != kFlags.end()) {
            flag->second(a);
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << "tessera-sim: " << arg << " needs a value\n";
            return usage(std::cerr, 2);
        }
        if (std::optional<int> refused = applyValue(a, arg, argv[++i]))
            return refused;
    }
    return std::nullopt;
}

// Writes the model (preset, codec and their overrides) and the schedule into a.options; the exit
// code when they are refused.
std::optional<int> configure(SimArguments& a) {
    SimOptions& options = a.options;
    auto config = ModelConfig::preset(a.preset);
    auto kind = parseCodec(a.codec);
    if (!config || !kind) {
        std::cerr << "tessera-sim: " << (!config ? config.message() : kind.message()) << "\n";
        return 2;
    }
    options.config = *config;
    options.config.codec = *kind;
    if (a.stages > 0)
        options.config.stages = static_cast<int>(a.stages);
    if (a.ratio > 0)
        options.config.subspaceRatio = static_cast<int>(a.ratio);
    options.config.momentBits = static_cast<int>(a.momentBits);
    if (a.lr > 0)
        options.optimizer.learningRate = options.schedule.peak = a.lr;
    options.schedule.decaySteps = a.steps;
    if (a.steps < 1) {
        std::cerr << "tessera-sim: --steps must be positive\n";
        return 2;
    }
    return std::nullopt;
}

// Opens the loss curve's CSV and writes its header; false when it cannot be written.
bool openCsv(const std::string& path, std::ofstream& csv) {
    csv.open(path);
    if (!csv) {
        std::cerr << "tessera-sim: cannot write " << path << "\n";
        return false;
    }
    csv << "step,tokens,train_loss,eval_loss,wire_bytes,seconds\n";
    return true;
}

// Runs `steps` steps, printing (and writing to csv, when open) the held-out loss every evalEvery
// steps and at the last; returns the last held-out loss.
double train(SwarmSimulator& sim, long long steps, long long evalEvery, std::ofstream& csv) {
    const auto start = std::chrono::steady_clock::now();
    double evalLoss = sim.evaluate();
    for (long long s = 1; s <= steps; ++s) {
        const SimStep r = sim.step();
        const bool report = s % evalEvery == 0 || s == steps;
        if (report)
            evalLoss = sim.evaluate();
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
    return evalLoss;
}

} // namespace

int main(int argc, char** argv) {
    SimArguments arguments;
    if (std::optional<int> done = parseArguments(argc, argv, arguments))
        return *done;
    if (std::optional<int> refused = configure(arguments))
        return *refused;

    auto sim = SwarmSimulator::create(arguments.options);
    if (!sim) {
        std::cerr << "tessera-sim: " << sim.message() << "\n";
        return 1;
    }
    std::ofstream csv;
    if (!arguments.csvPath.empty() && !openCsv(arguments.csvPath, csv))
        return 1;
    std::cout << "tessera-sim: " << (*sim)->describe() << "\n";
    if ((*sim)->entropyFloor() >= 0)
        std::printf("entropy floor of the data: %.4f nats/token\n", (*sim)->entropyFloor());
    const double evalLoss = train(**sim, arguments.steps, arguments.evalEvery, csv);
    std::printf("final loss %.4f\n", evalLoss);
    return 0;
}
