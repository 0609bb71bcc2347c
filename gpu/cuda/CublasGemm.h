// SPDX-License-Identifier: Apache-2.0
#pragma once
// One cuBLAS GEMM problem on the current device: C = A·B with A m×k, B k×n, C m×n, all in one
// dtype and column-major, accumulated in fp32. Set up once, then run as often as the
// benchmark or the accuracy check asks.

#include "CudaResources.h"
#include "base/Dtype.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::gpu::cudaimpl {

// Buffers, stream and cuBLAS handle for one GEMM shape; the caller selects the device first.
class CublasGemm {
public:
    CublasGemm(Dtype dtype, int m, int n, int k);

    // Device-side random inputs for timing: values in [-1, 1).
    void fillRandom(std::uint32_t seed);
    // Exact inputs for the accuracy check, already encoded in the dtype.
    void upload(const std::vector<std::byte>& a, const std::vector<std::byte>& b);
    void enqueue();
    // Seconds one GEMM took, measured with CUDA events around it.
    double timeOnce();
    std::vector<std::byte> downloadC();

private:
    Dtype m_dtype;
    int m_m;
    int m_n;
    int m_k;
    CudaStream m_stream;
    CublasHandle m_handle;
    DeviceBuffer m_a;
    DeviceBuffer m_b;
    DeviceBuffer m_c;
};

} // namespace tessera::gpu::cudaimpl
