// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CPU side of the benchmark, through LibTorch (whose fp32 GEMM is OpenBLAS's sgemm and
// bf16 GEMM oneDNN's): the same ops the engine will run.

#include "base/Dtype.h"
#include "base/Result.h"
#include "device/BenchTiming.h"

#include <cstddef>
#include <vector>

namespace tessera::gpu::cpu {

// Whether LibTorch can multiply matrices of this dtype on the CPU.
bool gemmSupported(Dtype dtype);

// Times C = A·B (A m×k, B k×n) in `dtype`.
Result<BenchSample> benchGemm(Dtype dtype, int m, int n, int k, const RepeatPolicy& policy);
// Times a copy of `bytes` between two buffers (reads + writes 2×bytes).
Result<BenchSample> benchCopy(std::size_t bytes, const RepeatPolicy& policy);

// The product the GEMM benchmark times, on caller data (row-major, converted to `dtype` and
// back): lets a test compare it with a naive reference.
Result<std::vector<float>> matmul(Dtype dtype, const std::vector<float>& a, const std::vector<float>& b,
                                  int m, int n, int k);

} // namespace tessera::gpu::cpu
