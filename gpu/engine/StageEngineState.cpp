// SPDX-License-Identifier: Apache-2.0
// StageEngine's shared helpers: devices, dtypes, optimizer checks, seeded ids, partitions, FLOPs.
#include "engine/StageEngineState.h"

#include "device/CudaBackend.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace tessera::gpu::engine_detail {

std::string str(std::int64_t v) {
    return std::to_string(v);
}

// "cpu", "cuda" or "cuda:N", checked against what this LibTorch and machine have.
Result<torch::Device> parseDevice(const std::string& name) {
    if (name == "cpu")
        return torch::Device(torch::kCPU);
    int index = 0;
    if (name != "cuda") {
        const std::string_view digits = name.starts_with("cuda:") ? std::string_view(name).substr(5) : "";
        const char* last = digits.data() + digits.size();
        if (digits.empty() || std::from_chars(digits.data(), last, index).ptr != last || index < 0)
            return makeError("unknown device '" + name + "': use \"cpu\" or \"cuda:N\"");
    }
    if (!at::hasCUDA())
        return makeError("device '" + name +
                         "': this build's LibTorch has no CUDA support (CPU only); "
                         "use \"cpu\", or build against a CUDA LibTorch");
    const auto count = static_cast<int>(torch::cuda::device_count());
    if (index >= count)
        return makeError("device '" + name + "' does not exist: " +
                         (count ? "this machine has cuda:0 to cuda:" + str(count - 1)
                                : std::string("no CUDA device is visible")));
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

Result<torch::ScalarType> resolveComputeDtype(std::optional<Dtype> asked, torch::Device device) {
    if (asked == Dtype::F32)
        return torch::kFloat;
    if (asked == Dtype::BF16)
        return torch::kBFloat16;
    if (asked)
        return makeError("compute dtype " + std::string(dtypeName(*asked)) +
                         " is not supported: fp32 or bf16");
    if (!device.is_cuda())
        return torch::kFloat;
    // LibTorch's CPU headers cannot ask for the compute capability; our CUDA module can. Without
    // it, fp32 is the choice that works everywhere.
    int major = 0;
    if (auto backend = loadCudaBackend())
        if (auto info = (*backend)->deviceInfo(device.index()))
            major = info->computeMajor;
    return StageModel::computeDtypeFor(device, major);
}

Status checkOptimizer(const OptimizerOptions& o) {
    const auto finite = [](double v) { return std::isfinite(v); };
    if (!finite(o.learningRate) || o.learningRate < 0)
        return makeError("optimizer: the learning rate must be finite and non-negative");
    if (!finite(o.beta1) || !finite(o.beta2) || o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1)
        return makeError("optimizer: beta1 and beta2 must be in [0, 1)");
    if (!finite(o.weightDecay) || o.weightDecay < 0 || !finite(o.epsilon) || o.epsilon <= 0)
        return makeError("optimizer: weight decay must be non-negative and epsilon positive");
    if (o.warmupSteps < 0)
        return makeError("optimizer: warm-up steps must be non-negative");
    return {};
}

std::string countWords(std::int64_t n) {
    char buffer[32];
    if (n < 10'000)
        return str(n);
    if (n < 1'000'000)
        return str((n + 500) / 1000) + "k";
    std::snprintf(buffer, sizeof buffer, n < 1'000'000'000 ? "%.2fM" : "%.2fB",
                  static_cast<double>(n) / (n < 1'000'000'000 ? 1e6 : 1e9));
    return buffer;
}

// splitmix64: the same synthetic ids on every machine (std distributions are not portable).
std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::vector<std::int32_t> seededIds(std::int64_t count, int vocab, std::uint64_t seed) {
    std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
    for (auto& id : ids)
        id = static_cast<std::int32_t>(splitmix64(seed) % static_cast<std::uint64_t>(vocab));
    return ids;
}

torch::Tensor idsTensor(const std::vector<std::int32_t>& ids, int batch, int seq) {
    // from_blob borrows; .to(kLong) makes the tensor's own copy.
    return torch::from_blob(const_cast<std::int32_t*>(ids.data()), {batch, seq}, torch::kInt)
        .to(torch::kLong);
}

Status checkPartition(int partition, int partitions) {
    if (partitions < 1 || partitions > 1000)
        return makeError("the partition count must be between 1 and 1000, got " + str(partitions));
    if (partition < -1 || partition >= partitions)
        return makeError("partition " + str(partition) + " is not in [0, " + str(partitions) +
                         ") nor -1 (all of them)");
    return {};
}

std::string partitionName(int partition, int partitions) {
    return partition == -1 ? "all " + str(partitions) + " SPARTA partitions"
                           : "SPARTA partition " + str(partition) + "/" + str(partitions);
}

// A NaN or infinity would spread through the whole model at the next step: refuse it at the door.
Status checkFinite(std::span<const float> values, const char* what) {
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad != values.end())
        return makeError("a non-finite value at index " + str(bad - values.begin()) + " in " + what);
    return {};
}

std::int64_t saturatingFlop(std::int64_t factor, std::int64_t parameters, std::int64_t tokens) {
    if (parameters <= 0 || tokens <= 0)
        return 0;
    std::int64_t out = 0;
    if (parameters > INT64_MAX / factor || __builtin_mul_overflow(factor * parameters, tokens, &out))
        return INT64_MAX;
    return out;
}

} // namespace tessera::gpu::engine_detail

namespace tessera::gpu {

using engine_detail::str;

Status StageEngine::State::setWeightsRange(std::int64_t offset, std::int64_t total,
                                           std::span<const float> values) {
    const std::int64_t count = model->parameterCount();
    const auto size = static_cast<std::int64_t>(values.size());
    if (total != count)
        return makeError("the sync is of " + str(total) + " weights; this stage has " + str(count));
    if (offset < 0 || size == 0 || offset > count - size)
        return makeError("values " + str(offset) + "+" + str(size) + " are not within the stage's " +
                         str(count) + " weights");
    if (auto finite = engine_detail::checkFinite(values, "the weights"); !finite)
        return finite;
    torch::NoGradGuard noGrad;
    std::int64_t start = 0; // of the current parameter, in parameter order
    for (const torch::Tensor& alias : aliases) {
        const std::int64_t from = std::max(offset, start),
                           to = std::min(offset + size, start + alias.numel());
        if (from < to)
            alias.view({-1})
                .narrow(0, from - start, to - from)
                .copy_(onDevice(values.subspan(static_cast<std::size_t>(from - offset),
                                               static_cast<std::size_t>(to - from))));
        start += alias.numel();
    }
    weightsReplaced();
    return {};
}

} // namespace tessera::gpu
