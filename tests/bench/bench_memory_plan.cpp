// SPDX-License-Identifier: Apache-2.0
// bench_memory_plan: the memory plan of every 8b stage on 12, 16, 24 and 80 GB GPUs (bf16, 4
// microbatches of 4,096 tokens in flight, AdamW's moments in 32 or 8 bits), then — given a folder —
// a real 8b stage on this CPU, as a node holds it: its shard written from the seeded weights, the
// engine created and the shard loaded (checked against its manifest), one microbatch forward and
// backward (recomputed, as the plan lays an 8b stage out), and one AdamW step with 8-bit moments;
// the time and the peak resident memory of each part beside what the plan says.
//
//   bench_memory_plan                              the table only
//   bench_memory_plan DIR [STAGE] [SEQ] [DEVICE] [PEAK] [STEP_CHUNK]
//        and the run (DIR gets a ~5 GB shard; STAGE 3, SEQ 256, DEVICE cpu; on cuda:N in bf16, the
//        device memory's peak sampled through NVML every 10 ms, context included). DIR "-": no shard,
//        the engine's own seeded weights (the device check, where the compute is the point).
//        STEP_CHUNK: the 8-bit step's values at once (default the engine's; "whole": a tensor at once)
#include "SelfMemory.h"
#include "base/TokenFrame.h"
#include "codec/Codec.h"
#include "device/Nvml.h"
#include "engine/StageEngine.h"
#include "model/MemoryPlan.h"
#include "model/StageModel.h"
#include "shard/InitialShards.h"
#include "shard/StageShard.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

using namespace tessera;
using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

ModelConfig eightB(int momentBits) {
    ModelConfig c = ModelConfig::preset("8b").value();
    c.momentBits = momentBits;
    return c;
}

void printTable() {
    std::printf(
        "Memory plan of the 8b preset's stages (bf16 compute, 4 microbatches of 1 x 4096 tokens in flight,\n"
        "90%% of the GPU's memory usable). Each cell: the layout chosen and what it needs; 'no' when no\n"
        "layout the engine builds fits, with what the host-optimizer layout (not built) would need.\n\n");
    const int gpus[] = {12, 16, 24, 80};
    for (int bits : {32, 8}) {
        const ModelConfig c = eightB(bits);
        std::printf("moments in %d bits\n%-6s %-8s", bits, "stage", "params");
        for (int g : gpus)
            std::printf(" | %-34s", (std::to_string(g) + " GB").c_str());
        std::printf("\n");
        for (int s = 0; s < c.stages; ++s) {
            std::printf("%-6d %6.2fB ", s, double(c.stageParameterCount(s)) / 1e9);
            for (int g : gpus) {
                MemoryPlanRequest r;
                r.deviceBytes = std::int64_t(g) * 1'000'000'000; // as GPUs are sold
                r.gpu = true;
                r.compute = Dtype::BF16;
                const MemoryPlan p = planStageMemory(c, s, r);
                char cell[64];
                if (p.fits) {
                    std::snprintf(cell, sizeof cell, "%s %.1f GiB",
                                  p.layout.keepActivations ? "keep"
                                  : p.layout.perBlock      ? "per block"
                                                           : "recompute",
                                  double(p.deviceBytes) / kGiB);
                } else {
                    r.layouts = allLayouts();
                    const MemoryPlan host = planStageMemory(c, s, r);
                    std::snprintf(cell, sizeof cell, "no (%.1f GiB; host-opt %.1f%s)",
                                  double(p.deviceBytes) / kGiB, double(host.deviceBytes) / kGiB,
                                  host.fits ? " fits" : "");
                }
                std::printf(" | %-34s", cell);
            }
            std::printf("\n");
        }
        std::printf("\n");
    }
}

// The device's memory in use, sampled every 10 ms while a phase runs (NVML: what the driver has given
// the process — the CUDA context and the caching allocator's reserve included).
class DeviceMemory {
public:
    explicit DeviceMemory(int index)
        : m_index(index) {
        if (index < 0)
            return;
        if (Result<std::unique_ptr<Nvml>> nvml = Nvml::load(); nvml)
            m_nvml = std::move(*nvml);
        else
            std::printf("  (no NVML: %s; device memory not measured)\n", nvml.message().c_str());
    }
    ~DeviceMemory() { stopGiB(); }
    void start() {
        m_peak = 0;
        if (!m_nvml)
            return;
        m_running = true;
        m_thread = std::thread([this] {
            while (m_running) {
                if (Result<GpuTelemetry> t = m_nvml->telemetry(m_index); t && t->usedMemoryBytes)
                    m_peak = std::max<std::uint64_t>(m_peak, *t->usedMemoryBytes);
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
    }
    double stopGiB() {
        m_running = false;
        if (m_thread.joinable())
            m_thread.join();
        return double(m_peak) / kGiB;
    }
    bool measures() const { return m_nvml != nullptr; }

private:
    int m_index;
    std::unique_ptr<Nvml> m_nvml;
    std::thread m_thread;
    std::atomic<bool> m_running{false};
    std::atomic<std::uint64_t> m_peak{0};
};

struct Phase {
    DeviceMemory* device;
    std::chrono::steady_clock::time_point start;
    explicit Phase(DeviceMemory* d)
        : device(d) {
        bench::resetSelfPeak();
        if (device)
            device->start();
        start = std::chrono::steady_clock::now();
    }
    double done(const char* what) const {
        if (device)
            torch::cuda::synchronize();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double used = device ? device->stopGiB() : 0;
        std::printf("  %-44s %7.2f s   peak RSS %5.2f GiB  (now %5.2f)", what, s,
                    bench::selfStatusGiB("VmHWM:"), bench::selfStatusGiB("VmRSS:"));
        if (device && device->measures())
            std::printf("   device peak %5.2f GiB", used);
        std::printf("\n");
        std::fflush(stdout);
        return s;
    }
};

int fail(const std::string& message) {
    std::cerr << "bench_memory_plan: " << message << "\n";
    return 1;
}

int runStage(const fs::path& dir, int stage, int seq, const std::string& device, double peakTflops,
             long long stepChunk) {
    const ModelConfig config = eightB(8);
    const bool cuda = device != "cpu";
    DeviceMemory memory(cuda ? std::atoi(device.substr(device.find(':') + 1).c_str()) : -1);
    DeviceMemory* onDevice = cuda ? &memory : nullptr;
    const bool shard = dir != "-";
    if (shard)
        fs::create_directories(dir);
    const fs::path file = dir / stageShardFileName(stage, 1);
    std::printf(
        "An 8b stage on %s: stage %d, %.3fB parameters, %s compute, 1 x %d tokens, moments in 8 bits, "
        "stepped %s\n",
        device.c_str(), stage, double(config.stageParameterCount(stage)) / 1e9, cuda ? "bf16" : "fp32", seq,
        stepChunk >= (1ll << 40) ? "a tensor at once"
        : stepChunk > 0          ? (std::to_string(stepChunk) + " values at once").c_str()
                                 : "in the engine's chunks");
    MemoryPlanRequest r;
    r.deviceBytes = std::int64_t(24) << 30;
    r.gpu = cuda;
    r.compute = cuda ? Dtype::BF16 : Dtype::F32;
    r.seqLen = seq;
    r.microbatchesInFlight = 1;
    r.layouts = {{false, true, false}};
    const MemoryPlan plan = planStageMemory(config, stage, r);
    std::printf(
        "  the plan (recompute per block, 1 microbatch): weights %.2f + gradients %.2f + moments %.2f + "
        "boundary %.2f + working %.2f = %.2f GiB\n",
        double(plan.parts.weightBytes) / kGiB, double(plan.parts.gradientBytes) / kGiB,
        double(plan.parts.optimizerBytes) / kGiB, double(plan.parts.activationBytesPerMicrobatch) / kGiB,
        double(plan.parts.workingBytes) / kGiB, double(plan.deviceBytes) / kGiB);
    ShardManifest manifest;
    if (shard) {
        Phase p(nullptr);
        const StageModel model(config, stage, torch::kCPU);
        Result<ShardManifest> written = writeStageShard(model, file, 1, 0);
        if (!written)
            return fail(written.message());
        manifest = *written;
        p.done("seeded weights built and the shard written");
    }
    StageEngineOptions options;
    options.config = config;
    options.stage = stage;
    options.device = device;
    options.keepActivations = false;
    options.recomputePerBlock = true;
    options.maxTokens = seq;
    if (stepChunk > 0)
        options.optimizer.stepChunkValues = stepChunk;
    std::unique_ptr<StageEngine> engine;
    {
        Phase p(onDevice);
        Result<std::unique_ptr<StageEngine>> made = StageEngine::create(options);
        if (!made)
            return fail(made.message());
        engine = std::move(*made);
        p.done("engine created (its own seeded weights)");
    }
    if (shard) {
        Phase p(onDevice);
        if (Status loaded = engine->loadShard(file, manifest); !loaded)
            return fail(loaded.message());
        p.done("shard checked against its manifest and loaded");
        fs::remove(file);
    }
    auto codec = makeCodec(config).value();
    torch::manual_seed(1);
    const torch::Tensor hidden = torch::randn({1, seq, config.dModel});
    const torch::Tensor tokens = torch::randint(0, config.vocabSize, {1, seq}, torch::kLong);
    const auto input = codec->encodeActivation(hidden, tokens);
    const auto gradOut = codec->encodeGradient(torch::randn({1, seq, config.dModel}) * 1e-3, tokens);
    // The last stage takes its targets (a token frame) and computes the loss instead of a gradient in.
    const torch::Tensor next = torch::randint(0, config.vocabSize, {seq}, torch::kInt);
    const Bytes targets =
        encodeTokens(std::span(next.data_ptr<std::int32_t>(), static_cast<std::size_t>(seq)), 1, seq).value();
    const bool last = stage == config.stages - 1;
    double forwardSeconds = 0, backwardSeconds = 0;
    for (int round = 0; round < (cuda ? 3 : 1); ++round) { // on a GPU, the first is the warm-up
        {
            Phase p(onDevice);
            auto f = engine->forward(round, input,
                                     last ? std::span<const std::uint8_t>(targets)
                                          : std::span<const std::uint8_t>());
            if (!f)
                return fail(f.message());
            forwardSeconds = p.done("forward (no graph)");
        }
        {
            Phase p(onDevice);
            auto b =
                last ? engine->backward(round, {}, input, targets) : engine->backward(round, gradOut, input);
            if (!b)
                return fail(b.message());
            backwardSeconds = p.done("backward (recomputed a block at a time)");
        }
    }
    {
        Phase p(onDevice);
        if (Status s = engine->step(1); !s)
            return fail(s.message());
        p.done("AdamW step, moments made and kept in 8 bits");
    }
    // Matmul FLOP: the forward 2·P·T, the backward's recompute 2·P·T and its two products 4·P·T (attention's
    // T² terms left out: a lower bound of the work done).
    const double flop = 8.0 * double(config.stageParameterCount(stage)) * seq;
    const double seconds = forwardSeconds + backwardSeconds;
    std::printf("  %.2f TFLOP in one forward and backward: %.3f TFLOP/s, %.0f tokens/s\n", flop / 1e12,
                flop / seconds / 1e12, seq / seconds);
    if (peakTflops > 0)
        std::printf("  MFU %.1f%% of a %.0f TFLOP/s peak (the matmul FLOP above over the wall time)\n",
                    100.0 * flop / seconds / 1e12 / peakTflops, peakTflops);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    printTable();
    if (argc < 2)
        return 0;
    const int stage = argc > 2 ? std::atoi(argv[2]) : 3;
    const int seq = argc > 3 ? std::atoi(argv[3]) : 256;
    const double peak = argc > 5 ? std::atof(argv[5]) : 0; // TFLOP/s of the device, for the MFU
    // The 8-bit step's chunk (values decoded, stepped and coded at once); "whole": each tensor at once, as
    // before the step was chunked (its peak, side by side with the default's).
    const long long stepChunk =
        argc > 6 ? (std::string(argv[6]) == "whole" ? 1ll << 40 : std::atoll(argv[6])) : 0;
    return runStage(argv[1], stage, seq, argc > 4 ? argv[4] : "cpu", peak, stepChunk);
}
