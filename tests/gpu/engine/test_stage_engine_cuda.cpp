// SPDX-License-Identifier: Apache-2.0
// StageEngine on a CUDA device against the same engine on the CPU (tiny, two stages): in fp32 the
// two compute the same losses, gradients and AdamW steps (to float rounding); bf16, the default on a
// GPU of compute capability 8+, learns like fp32; a shard saved on one loads on the other; the codec
// computes on the device and reads and writes the CPU codec's frames. Skipped where this build's
// LibTorch or the machine has no CUDA device (scripts/gpu-check.sh runs it on a lent GPU).
#include "StageEngineTestSupport.h"

#include <torch/cuda.h>

using namespace tessera::gpu;
using namespace tessera::test;

namespace {

void needCuda() {
    if (!torch::cuda::is_available())
        skip("no CUDA device (this LibTorch is CPU-only or the machine has no GPU)");
}

std::unique_ptr<StageEngine> onDevice(const ModelConfig& config, int stage, std::string device,
                                      std::optional<Dtype> dtype) {
    StageEngineOptions o = optionsFor(config, stage);
    o.device = std::move(device);
    o.computeDtype = dtype;
    auto e = StageEngine::create(o);
    CHECK_MSG(e.ok(), e.message());
    return std::move(e).value();
}

struct Pair {
    std::unique_ptr<StageEngine> first, last;
};

Pair pairOn(const ModelConfig& config, const std::string& device, std::optional<Dtype> dtype) {
    return {onDevice(config, 0, device, dtype), onDevice(config, 1, device, dtype)};
}

// `steps` optimizer steps of two microbatches each; the loss of every microbatch.
std::vector<double> train(Pair& p, int steps) {
    std::vector<double> losses;
    for (int step = 0; step < steps; ++step) {
        for (int m = 0; m < 2; ++m)
            losses.push_back(trainMicrobatch(*p.first, *p.last, step * 2 + m, makeBatch(step * 2 + m)));
        CHECK(p.first->step(2).ok() && p.last->step(2).ok());
    }
    return losses;
}

double worstWeights(Pair& a, Pair& b, const fs::path& dir) {
    double worst = 0;
    for (auto [x, y] : {std::pair{a.first.get(), b.first.get()}, std::pair{a.last.get(), b.last.get()}}) {
        const auto wa = weightsOf(*x, dir / "a"), wb = weightsOf(*y, dir / "b");
        for (const auto& [name, t] : wa)
            worst = std::max(worst, worstRelative(wb.at(name), t));
    }
    return worst;
}

} // namespace

// fp32 on both: the same numbers but for the order of float sums (cuBLAS vs OpenBLAS), for the
// exact codec and for the subspace codec with int8 coefficients (whose rounding may flip a unit).
TESSERA_TEST(fp32OnTheGpuComputesWhatTheCpuComputes) {
    needCuda();
    for (const auto& [codec, lossTolerance, weightTolerance] :
         {std::tuple{CodecKind::None, 1e-5, 1e-4}, std::tuple{CodecKind::Subspace, 1e-3, 1e-2}}) {
        TempDir dir;
        fs::create_directories(dir.path / "a");
        fs::create_directories(dir.path / "b");
        const auto config = twoStages(codec);
        Pair cpu = pairOn(config, "cpu", Dtype::F32), gpu = pairOn(config, "cuda:0", Dtype::F32);
        CHECK(gpu.first->device() == "cuda:0" && gpu.first->computeDtype() == Dtype::F32);
        const auto a = train(cpu, 3), b = train(gpu, 3);
        for (std::size_t i = 0; i < a.size(); ++i)
            CHECK_MSG(std::abs(a[i] - b[i]) <= lossTolerance * a[i],
                      codecName(codec) << " microbatch " << i << ": cpu " << a[i] << ", cuda " << b[i]);
        const double worst = worstWeights(cpu, gpu, dir.path);
        CHECK_MSG(worst <= weightTolerance, codecName(codec)
                                                << ": weights differ by " << worst << " after 3 steps");
        std::printf("  %s: 6 losses within %.1e, weights within %.1e of the CPU's after 3 steps\n",
                    std::string(codecName(codec)).c_str(), lossTolerance, worst);
    }
}

// With no dtype asked, a GPU of compute capability 8+ computes in bf16 over fp32 masters: it starts
// at the CPU's loss (to bf16's precision) and learns a repeated batch as the fp32 test does.
TESSERA_TEST(bf16IsTheDefaultOnTheGpuAndLearns) {
    needCuda();
    const auto config = twoStages();
    Pair cpu = pairOn(config, "cpu", Dtype::F32), gpu = pairOn(config, "cuda", std::nullopt);
    CHECK_MSG(gpu.first->computeDtype() == Dtype::BF16, "an H100/H200-class GPU computes in bf16 by default");
    const Batch b = makeBatch(2);
    std::vector<double> cpuLoss, gpuLoss;
    for (int step = 0; step < 8; ++step) {
        cpuLoss.push_back(trainMicrobatch(*cpu.first, *cpu.last, step, b));
        gpuLoss.push_back(trainMicrobatch(*gpu.first, *gpu.last, step, b));
        CHECK(cpu.first->step(1).ok() && cpu.last->step(1).ok() && gpu.first->step(1).ok() &&
              gpu.last->step(1).ok());
    }
    CHECK_MSG(std::abs(gpuLoss[0] - cpuLoss[0]) <= 0.02 * cpuLoss[0], gpuLoss[0] << " vs " << cpuLoss[0]);
    CHECK_MSG(gpuLoss.back() < gpuLoss.front() - 1.0,
              "bf16 loss " << gpuLoss.front() << " -> " << gpuLoss.back());
    CHECK_MSG(std::abs(gpuLoss.back() - cpuLoss.back()) <= 0.1 * cpuLoss.back(),
              "after 8 steps bf16 " << gpuLoss.back() << ", fp32 " << cpuLoss.back());
    std::printf("  loss over 8 steps: fp32 cpu %.4f -> %.4f, bf16 cuda %.4f -> %.4f\n", cpuLoss.front(),
                cpuLoss.back(), gpuLoss.front(), gpuLoss.back());
}

// A shard the CPU engine saved loads into a CUDA engine (checked against its manifest) and back.
TESSERA_TEST(aShardCrossesBetweenTheCpuAndTheGpu) {
    needCuda();
    TempDir dir;
    const auto config = twoStages();
    Pair cpu = pairOn(config, "cpu", Dtype::F32);
    train(cpu, 2);
    const fs::path file = dir.path / "stage-0.safetensors";
    auto manifest = cpu.first->saveShard(file, 2, 0);
    CHECK_MSG(manifest.ok(), manifest.message());
    auto gpu = onDevice(config, 0, "cuda:0", Dtype::F32);
    CHECK_MSG(gpu->loadShard(file, *manifest).ok(), "a CPU shard loads on the GPU");
    CHECK_MSG(shardHash(*gpu, dir.path) == manifest->sha256, "saved back from the GPU, the same bytes");
}

// The codec on the device: frames it writes decode on the CPU codec to the same values (fp32
// coefficients) and the CPU's frames decode on the device, on the device.
TESSERA_TEST(theCodecComputesOnTheDeviceAndSpeaksTheCpusFrames) {
    needCuda();
    const auto config = twoStages(CodecKind::Subspace);
    CodecOptions host, device;
    host.activationDtype = device.activationDtype = Dtype::F32;
    device.device = torch::Device(torch::kCUDA, 0);
    const auto onCpu = makeCodec(config, host).value(), onGpu = makeCodec(config, device).value();
    torch::manual_seed(3);
    const torch::Tensor ids = torch::randint(0, config.vocabSize, {kBatch, kSeq}, torch::kLong);
    const torch::Tensor hidden = torch::randn({kBatch, kSeq, config.dModel});
    const auto fromGpu = onGpu->encodeActivation(hidden.to(torch::kCUDA), ids);
    const auto fromCpu = onCpu->encodeActivation(hidden, ids);
    CHECK(fromGpu.size() == fromCpu.size());
    const auto a = onCpu->decodeActivation(fromGpu).value(), b = onGpu->decodeActivation(fromCpu).value();
    CHECK(a.hidden.device().is_cpu() && b.hidden.device().is_cuda());
    const double diff = worstRelative(b.hidden.cpu(), a.hidden);
    CHECK_MSG(diff <= 1e-5, "a frame decoded across devices differs by " << diff);
    CHECK(torch::equal(a.tokens, b.tokens.cpu()) && torch::equal(a.tokens.view({kBatch, kSeq}), ids));
    const auto g = onGpu->decodeGradient(onCpu->encodeGradient(hidden * 1e-3, ids)).value();
    CHECK(g.device().is_cuda() && g.sizes() == hidden.sizes());
}
