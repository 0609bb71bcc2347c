// SPDX-License-Identifier: Apache-2.0
#include "model/Subspace.h"

#include "base/ParallelFor.h"
#include "base/SplitMix.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace tessera::gpu {

namespace {

constexpr std::uint64_t kBasisStream = 0x5553ull;     // "US"
constexpr std::uint64_t kEmbeddingStream = 0x4546ull; // "EF"

} // namespace

double seededUniform(std::uint64_t seed, std::uint64_t index) {
    // 53 random bits -> [0, 1) -> [-1, 1): exact in double, identical everywhere.
    const std::uint64_t bits = splitMix64(splitMix64(seed) ^ index) >> 11;
    return static_cast<double>(bits) * 0x1.0p-53 * 2.0 - 1.0;
}

SubspaceBasis makeSubspaceBasis(const ModelConfig& config) {
    return {makeSubspaceU(config), torch::Tensor()};
}

torch::Tensor makeSubspaceU(const ModelConfig& config) {
    const int d = config.dModel;
    const int k = config.subspaceDim();
    if (k < 1 || k > d)
        throw std::invalid_argument("subspace dimension out of range");

    // Modified Gram-Schmidt over k random columns, twice for numerical orthogonality.
    std::vector<double> u(static_cast<std::size_t>(d) * k);
    const std::uint64_t basisSeed = config.seed ^ (kBasisStream << 48);
    for (std::size_t i = 0; i < u.size(); ++i)
        u[i] = seededUniform(basisSeed, i);
    auto column = [&](int c) { return u.data() + static_cast<std::size_t>(c) * d; };
    for (int c = 0; c < k; ++c) {
        for (int pass = 0; pass < 2; ++pass)
            for (int p = 0; p < c; ++p) {
                double dot = 0;
                for (int i = 0; i < d; ++i)
                    dot += column(c)[i] * column(p)[i];
                for (int i = 0; i < d; ++i)
                    column(c)[i] -= dot * column(p)[i];
            }
        double norm = 0;
        for (int i = 0; i < d; ++i)
            norm += column(c)[i] * column(c)[i];
        norm = std::sqrt(norm);
        for (int i = 0; i < d; ++i)
            column(c)[i] /= norm;
    }
    auto basis = torch::empty({d, k}, torch::kFloat);
    auto* b = basis.data_ptr<float>();
    for (int i = 0; i < d; ++i)
        for (int c = 0; c < k; ++c)
            b[static_cast<std::size_t>(i) * k + c] = static_cast<float>(column(c)[i]);
    return basis;
}

namespace {

// The ids, flat, int64 on the CPU, each checked against the vocabulary.
torch::Tensor checkedIds(const ModelConfig& config, const torch::Tensor& ids) {
    if (!torch::isIntegralType(ids.scalar_type(), false))
        throw std::invalid_argument("fixedEmbeddingRows: token ids must be integers");
    const torch::Tensor flat = ids.flatten().to(torch::kCPU, torch::kLong).contiguous();
    const std::int64_t* id = flat.data_ptr<std::int64_t>();
    for (std::int64_t t = 0; t < flat.numel(); ++t)
        if (id[t] < 0 || id[t] >= config.vocabSize)
            throw std::invalid_argument("fixedEmbeddingRows: token id " + std::to_string(id[t]) +
                                        " is not in [0, vocab_size)");
    return flat;
}

// x >> shift on uint64 bits held in int64 (torch shifts int64 arithmetically: mask the sign's copies).
torch::Tensor logicalShiftRight(const torch::Tensor& x, int shift) {
    return at::bitwise_and(at::bitwise_right_shift(x, shift), static_cast<std::int64_t>(~0ull >> shift));
}

// splitMix64 elementwise on uint64 bits held in int64: additions and products wrap as uint64's do.
torch::Tensor splitMix64(torch::Tensor x) {
    const auto asSigned = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
    x = x + asSigned(0x9e3779b97f4a7c15ull);
    x = at::bitwise_xor(x, logicalShiftRight(x, 30)) * asSigned(0xbf58476d1ce4e5b9ull);
    x = at::bitwise_xor(x, logicalShiftRight(x, 27)) * asSigned(0x94d049bb133111ebull);
    return at::bitwise_xor(x, logicalShiftRight(x, 31));
}

} // namespace

torch::Tensor fixedEmbeddingRowsByTensorOps(const ModelConfig& config, const torch::Tensor& ids,
                                            torch::Device device) {
    const torch::Tensor flat = checkedIds(config, ids).to(device);
    const std::int64_t n = flat.numel(), d = config.dModel;
    const auto streamKey = static_cast<std::int64_t>(gpu::splitMix64(config.seed ^ (kEmbeddingStream << 48)));
    const double scale = std::sqrt(3.0);
    torch::Tensor rows = torch::empty({n, d}, torch::TensorOptions().dtype(torch::kFloat).device(device));
    // 512 tokens at a time: the int64 temporaries stay ~16 MiB each at d = 4096.
    const auto columns = torch::arange(d, torch::TensorOptions().dtype(torch::kLong).device(device));
    for (std::int64_t begin = 0; begin < n; begin += 512) {
        const std::int64_t count = std::min<std::int64_t>(512, n - begin);
        const auto index = flat.narrow(0, begin, count).unsqueeze(1) * d + columns.unsqueeze(0);
        // seededUniform: 53 bits -> [0, 1) -> [-1, 1), in double, exact; then the scale and the float.
        const auto bits = logicalShiftRight(splitMix64(at::bitwise_xor(index, streamKey)), 11);
        rows.narrow(0, begin, count)
            .copy_(((bits.to(torch::kDouble) * 0x1.0p-53 * 2.0 - 1.0) * scale).to(torch::kFloat));
    }
    return rows;
}

torch::Tensor fixedEmbeddingRows(const ModelConfig& config, const torch::Tensor& ids, torch::Device device) {
    if (!device.is_cpu())
        return fixedEmbeddingRowsByTensorOps(config, ids, device);
    const torch::Tensor flat = checkedIds(config, ids);
    const std::int64_t n = flat.numel(), d = config.dModel;
    const std::int64_t* id = flat.data_ptr<std::int64_t>();
    const std::uint64_t embeddingSeed = config.seed ^ (kEmbeddingStream << 48);
    const double scale = std::sqrt(3.0);
    torch::Tensor rows = torch::empty({n, d}, torch::kFloat);
    float* out = rows.data_ptr<float>();
    parallelFor(n, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(d, 1)), at::get_num_threads(),
                [=](std::int64_t begin, std::int64_t end) {
                    for (std::int64_t t = begin; t < end; ++t) {
                        const auto base = static_cast<std::uint64_t>(id[t]) * static_cast<std::uint64_t>(d);
                        for (std::int64_t j = 0; j < d; ++j)
                            out[t * d + j] = static_cast<float>(
                                scale * seededUniform(embeddingSeed, base + static_cast<std::uint64_t>(j)));
                    }
                });
    return rows;
}

torch::Tensor makeFixedEmbedding(const ModelConfig& config) {
    const int d = config.dModel;
    // Fixed embedding rows with unit RMS (uniform [-1,1) has variance 1/3).
    const std::uint64_t embeddingSeed = config.seed ^ (kEmbeddingStream << 48);
    auto embedding = torch::empty({config.vocabSize, d}, torch::kFloat);
    auto* e = embedding.data_ptr<float>();
    const double scale = std::sqrt(3.0);
    const auto n = static_cast<std::uint64_t>(config.vocabSize) * static_cast<std::uint64_t>(d);
    for (std::uint64_t i = 0; i < n; ++i)
        e[i] = static_cast<float>(scale * seededUniform(embeddingSeed, i));
    return embedding;
}

} // namespace tessera::gpu
