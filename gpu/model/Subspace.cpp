// SPDX-License-Identifier: Apache-2.0
#include "model/Subspace.h"

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

torch::Tensor fixedEmbeddingRows(const ModelConfig& config, const torch::Tensor& ids) {
    if (!torch::isIntegralType(ids.scalar_type(), false))
        throw std::invalid_argument("fixedEmbeddingRows: token ids must be integers");
    const torch::Tensor flat = ids.flatten().to(torch::kCPU, torch::kLong).contiguous();
    const std::int64_t n = flat.numel(), d = config.dModel;
    const std::int64_t* id = flat.data_ptr<std::int64_t>();
    for (std::int64_t t = 0; t < n; ++t)
        if (id[t] < 0 || id[t] >= config.vocabSize)
            throw std::invalid_argument("fixedEmbeddingRows: token id " + std::to_string(id[t]) +
                                        " is not in [0, vocab_size)");
    const std::uint64_t embeddingSeed = config.seed ^ (kEmbeddingStream << 48);
    const double scale = std::sqrt(3.0);
    torch::Tensor rows = torch::empty({n, d}, torch::kFloat);
    float* out = rows.data_ptr<float>();
    at::parallel_for(
        0, n, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(d, 1)),
        [&](std::int64_t begin, std::int64_t end) {
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
