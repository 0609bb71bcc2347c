// SPDX-License-Identifier: Apache-2.0
#pragma once
// Launchers for the module's own kernels. They enqueue on `stream` and throw CudaFailure when
// the launch fails (for example no kernel image for this GPU's architecture).

#include "base/Dtype.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tessera::gpu::cudaimpl {

// Fills `count` elements of `dtype` with values in [-1, 1) hashed from (seed, index), so a
// GEMM multiplies ordinary numbers rather than whatever cudaMalloc left behind.
void fillUniform(void* data, std::size_t count, Dtype dtype, std::uint32_t seed, cudaStream_t stream);

// Copies `bytes` from `src` to `dst` (both cudaMalloc'd, hence 256-byte aligned) with a
// grid-stride loop over 16-byte vectors; `blocks` blocks of 256 threads.
void copyBytes(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream);

// A grid that keeps every SM busy for a copy of `bytes` without launching idle blocks.
int copyGridBlocks(std::size_t bytes, int multiprocessors);

} // namespace tessera::gpu::cudaimpl
