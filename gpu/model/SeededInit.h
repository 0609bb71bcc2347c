// SPDX-License-Identifier: Apache-2.0
#pragma once
// Seeded parameter initialisation: a parameter's initial values depend only on the run's seed
// and the parameter's name, so they are the same on every machine and however the model is
// split into stages. Internal to gpu/ (includes torch).

#include <torch/types.h>

#include <cstdint>
#include <string_view>

namespace tessera::gpu {

// Fills a contiguous fp32 CPU tensor with N(0, stddev²) draws from the counter-based generator
// behind the subspace basis (seededUniform, Box-Muller in double), on LibTorch's intra-op count of
// threads (the node's compute throttle).
void fillSeededNormal(const torch::Tensor& tensor, std::uint64_t seed, std::string_view name, double stddev);
// Elements [firstIndex, firstIndex + count) of that fill (of the flattened tensor) into out[0, count):
// element i draws from counters 2i and 2i+1 alone, so a piece is made without the rest of the
// tensor, bit for bit (a large tensor streamed to a file a few megabytes at a time), and the same
// values whatever the number of threads (at least 1) that make them.
void fillSeededNormal(float* out, std::int64_t count, std::int64_t firstIndex, std::uint64_t seed,
                      std::string_view name, double stddev, int threads);

} // namespace tessera::gpu
