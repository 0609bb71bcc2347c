// SPDX-License-Identifier: Apache-2.0
#include "CublasGemm.h"

#include "CudaKernels.h"

#include <library_types.h>

#include <string>

namespace tessera::gpu::cudaimpl {
namespace {

cudaDataType cudaTypeOf(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32:
        return CUDA_R_32F;
    case Dtype::BF16:
        return CUDA_R_16BF;
    case Dtype::F16:
        return CUDA_R_16F;
    case Dtype::I8:
        break;
    }
    fail("the CUDA backend has no " + std::string(dtypeName(dtype)) + " GEMM");
}

// Validates before anything is allocated, so an int8 request costs nothing.
Dtype requireFloatDtype(Dtype dtype) {
    (void)cudaTypeOf(dtype);
    return dtype;
}

std::size_t matrixBytes(Dtype dtype, int rows, int cols) {
    if (rows <= 0 || cols <= 0)
        fail("GEMM dimensions must be positive, got " + std::to_string(rows) + "×" + std::to_string(cols));
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * dtypeSize(dtype);
}

} // namespace

CublasGemm::CublasGemm(Dtype dtype, int m, int n, int k)
    : m_dtype(requireFloatDtype(dtype))
    , m_m(m)
    , m_n(n)
    , m_k(k)
    , m_a(matrixBytes(dtype, m, k))
    , m_b(matrixBytes(dtype, k, n))
    , m_c(matrixBytes(dtype, m, n)) {
    checkCublas(cublasSetStream(m_handle.get(), m_stream.get()), "cublasSetStream");
    // Default math with CUBLAS_COMPUTE_32F: fp32 stays true fp32 (TF32 needs an explicit opt-in),
    // while bf16/fp16 inputs may use tensor cores with fp32 accumulation.
    checkCublas(cublasSetMathMode(m_handle.get(), CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

void CublasGemm::fillRandom(std::uint32_t seed) {
    fillUniform(m_a.get(), static_cast<std::size_t>(m_m) * m_k, m_dtype, seed, m_stream.get());
    fillUniform(m_b.get(), static_cast<std::size_t>(m_k) * m_n, m_dtype, seed + 1, m_stream.get());
    m_stream.synchronize();
}

void CublasGemm::upload(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
    if (a.size() != m_a.bytes() || b.size() != m_b.bytes())
        fail("GEMM upload: input sizes do not match the problem");
    checkCuda(cudaMemcpyAsync(m_a.get(), a.data(), a.size(), cudaMemcpyHostToDevice, m_stream.get()),
              "cudaMemcpyAsync(A)");
    checkCuda(cudaMemcpyAsync(m_b.get(), b.data(), b.size(), cudaMemcpyHostToDevice, m_stream.get()),
              "cudaMemcpyAsync(B)");
    m_stream.synchronize();
}

void CublasGemm::enqueue() {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    const cudaDataType type = cudaTypeOf(m_dtype);
    checkCublas(cublasGemmEx(m_handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m_m, m_n, m_k, &alpha, m_a.get(), type,
                             m_m, m_b.get(), type, m_k, &beta, m_c.get(), type, m_m, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx(" + std::string(dtypeName(m_dtype)) + ")");
}

double CublasGemm::timeOnce() {
    return timeOnStream(m_stream.get(), [this] { enqueue(); });
}

std::vector<std::byte> CublasGemm::downloadC() {
    std::vector<std::byte> c(m_c.bytes());
    checkCuda(cudaMemcpyAsync(c.data(), m_c.get(), c.size(), cudaMemcpyDeviceToHost, m_stream.get()),
              "cudaMemcpyAsync(C)");
    m_stream.synchronize();
    return c;
}

} // namespace tessera::gpu::cudaimpl
