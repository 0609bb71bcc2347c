// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fixed parts of the subspace ("Protocol Models") constraint, derived from the run's seed
// so that every node rebuilds them bit for bit with nothing to download: an orthonormal basis
// U (d×k) of the residual stream's learnable part, and a fixed token embedding E (vocab×d).
// Internal to gpu/ (includes torch).

#include "base/ModelConfig.h"

#include <torch/types.h>

#include <cstdint>

namespace tessera::gpu {

struct SubspaceBasis {
    torch::Tensor basis; // U: [d, k] fp32, orthonormal columns
    // E: [vocab, d] fp32 when given (tests); undefined (makeSubspaceBasis): the rows a frame needs are
    // generated from the seed (fixedEmbeddingRows) — at 8b the whole E is 2 GiB in every process.
    torch::Tensor fixedEmbedding;
};

// Deterministic on every machine: integer RNG (splitmix64) and a scalar double-precision
// Gram-Schmidt, no BLAS and no torch RNG (whose vectorised paths differ between CPUs). U only.
SubspaceBasis makeSubspaceBasis(const ModelConfig& config);
// Its two parts alone: only stage 0 embeds tokens, the other stages need U alone (at 8b, E is
// 2 GiB and takes seconds to generate).
torch::Tensor makeSubspaceU(const ModelConfig& config);
torch::Tensor makeFixedEmbedding(const ModelConfig& config);
// E's rows for `ids` (integral, each in [0, vocab_size), else std::invalid_argument): [ids.numel(), d]
// fp32 on `device`, exactly makeFixedEmbedding(config).index_select(0, ids.flatten()) — each element is
// its own counter of the generator, so only the rows asked for are made.
// On a GPU (`device` not the CPU) the rows are made there, from the same integers by tensor operations:
// bit for bit the CPU's (the generator is integer arithmetic, then exact double steps and one rounding),
// so a stage on a GPU never computes E on its CPU nor moves it over the bus.
torch::Tensor fixedEmbeddingRows(const ModelConfig& config, const torch::Tensor& ids,
                                 torch::Device device = torch::kCPU);
// That tensor-operation path on any device (the CPU too: the test compares it with the loop).
torch::Tensor fixedEmbeddingRowsByTensorOps(const ModelConfig& config, const torch::Tensor& ids,
                                            torch::Device device);

// The counter-based generator behind both: uniform in [-1, 1) for (seed, index).
double seededUniform(std::uint64_t seed, std::uint64_t index);

} // namespace tessera::gpu
