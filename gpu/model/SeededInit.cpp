// SPDX-License-Identifier: Apache-2.0
#include "model/SeededInit.h"

#include "base/ParallelFor.h"
#include "model/Subspace.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace tessera::gpu {

namespace {

// FNV-1a: the parameter's name picks its stream of the generator.
std::uint64_t nameHash(std::string_view name) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : name) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

} // namespace

void fillSeededNormal(float* out, std::int64_t count, std::int64_t firstIndex, std::uint64_t seed,
                      std::string_view name, double stddev, int threads) {
    if (count < 0 || firstIndex < 0)
        throw std::invalid_argument("fillSeededNormal needs a non-negative range");
    const std::uint64_t stream = seed ^ nameHash(name);
    // Each element draws from its own two counters, so the values do not depend on how the
    // work is divided between threads, nor on which piece of the tensor is asked for.
    // On plain threads (base/ParallelFor: at::parallel_for is serial in gpu/).
    parallelFor(count, 1 << 14, threads, [=](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
            const auto n = static_cast<std::uint64_t>(firstIndex + i) * 2;
            const double radius = 1.0 - (seededUniform(stream, n) + 1.0) * 0.5;           // (0, 1]
            const double angle = (seededUniform(stream, n + 1) + 1.0) * std::numbers::pi; // [0, 2π)
            out[i] = static_cast<float>(stddev * std::sqrt(-2.0 * std::log(radius)) * std::cos(angle));
        }
    });
}

void fillSeededNormal(const torch::Tensor& tensor, std::uint64_t seed, std::string_view name, double stddev) {
    if (tensor.device() != torch::kCPU || tensor.scalar_type() != torch::kFloat || !tensor.is_contiguous())
        throw std::invalid_argument("fillSeededNormal needs a contiguous fp32 CPU tensor");
    fillSeededNormal(tensor.data_ptr<float>(), tensor.numel(), 0, seed, name, stddev, at::get_num_threads());
}

} // namespace tessera::gpu
