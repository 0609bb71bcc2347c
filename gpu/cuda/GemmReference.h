// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CPU side of the GEMM accuracy check (llama.cpp's test-backend-ops idea): seeded inputs,
// their encoding in the GEMM's dtype, a double-precision reference product, and the error
// measure. Matrices are column-major, as cuBLAS stores them: A m×k (lda m), B k×n (ldb k),
// C m×n (ldc m).

#include "base/Dtype.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::gpu::cudaimpl {

// `count` values in [-1, 1) from a 64-bit LCG; the same seed gives the same values everywhere.
std::vector<float> seededValues(std::size_t count, std::uint64_t seed);

// Encodes `values` as `dtype` (round to nearest even) and replaces each value by what the
// encoding holds, so the reference sees exactly the numbers the GPU multiplies.
std::vector<std::byte> encodeRounding(std::vector<float>& values, Dtype dtype);
std::vector<float> decode(const std::vector<std::byte>& bytes, Dtype dtype);

// C = A·B in double precision.
std::vector<double> referenceGemm(const std::vector<float>& a, const std::vector<float>& b, int m, int n,
                                  int k);

// max |c - ref| / max |ref|: the worst absolute error, relative to the result's scale. Unlike
// an element-wise ratio it does not explode on entries that happen to be close to zero.
double maxRelativeError(const std::vector<float>& c, const std::vector<double>& reference);

} // namespace tessera::gpu::cudaimpl
