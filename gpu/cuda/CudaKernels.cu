// SPDX-License-Identifier: Apache-2.0
#include "CudaKernels.h"

#include "CudaCheck.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace tessera::gpu::cudaimpl {
namespace {

constexpr int kThreads = 256;

__device__ float uniformAt(std::uint32_t seed, std::size_t index) {
    // splitmix64 finaliser: cheap, and neighbouring indices give unrelated values.
    std::uint64_t x = index + (static_cast<std::uint64_t>(seed) << 32) + 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f; // 24 bits → [-1, 1)
}

__device__ void store(float* p, float v) {
    *p = v;
}
__device__ void store(__nv_bfloat16* p, float v) {
    *p = __float2bfloat16_rn(v);
}
__device__ void store(__half* p, float v) {
    *p = __float2half_rn(v);
}

template <class T>
__global__ void fillUniformKernel(T* data, std::size_t count, std::uint32_t seed) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride)
        store(data + i, uniformAt(seed, i));
}

// The bulk moves as uint4 (one 16-byte load and store per thread and step, the widest the
// memory system serves per instruction); the last <16 bytes are copied one by one.
__global__ void copyKernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t vectors,
                           unsigned char* __restrict__ dstTail, const unsigned char* __restrict__ srcTail,
                           std::size_t tailBytes) {
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = first; i < vectors; i += stride)
        dst[i] = src[i];
    if (first < tailBytes)
        dstTail[first] = srcTail[first];
}

template <class T>
void launchFill(void* data, std::size_t count, std::uint32_t seed, cudaStream_t stream) {
    const std::size_t wanted = (count + kThreads - 1) / kThreads;
    const int blocks = static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(wanted, 1), 65535));
    fillUniformKernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(data), count, seed);
    checkCuda(cudaGetLastError(), "fill kernel launch");
}

} // namespace

void fillUniform(void* data, std::size_t count, Dtype dtype, std::uint32_t seed, cudaStream_t stream) {
    switch (dtype) {
    case Dtype::F32:
        return launchFill<float>(data, count, seed, stream);
    case Dtype::BF16:
        return launchFill<__nv_bfloat16>(data, count, seed, stream);
    case Dtype::F16:
        return launchFill<__half>(data, count, seed, stream);
    case Dtype::I8:
        break;
    }
    fail("fill kernel: no floating-point fill for " + std::string(dtypeName(dtype)));
}

void copyBytes(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream) {
    const std::size_t vectors = bytes / sizeof(uint4);
    const std::size_t head = vectors * sizeof(uint4);
    copyKernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src),
                                                vectors, static_cast<unsigned char*>(dst) + head,
                                                static_cast<const unsigned char*>(src) + head, bytes - head);
    checkCuda(cudaGetLastError(), "copy kernel launch");
}

int copyGridBlocks(std::size_t bytes, int multiprocessors) {
    // 8 blocks of 256 threads per SM are enough to saturate HBM; more only adds scheduling.
    const std::size_t vectors = bytes / sizeof(uint4);
    const std::size_t wanted = std::max<std::size_t>((vectors + kThreads - 1) / kThreads, 1);
    return static_cast<int>(
        std::min<std::size_t>(wanted, static_cast<std::size_t>(std::max(multiprocessors, 1)) * 8));
}

} // namespace tessera::gpu::cudaimpl
