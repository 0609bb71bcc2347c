// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checks for CUDA runtime and cuBLAS calls. A failed call throws CudaFailure naming the call;
// CudaBackendImpl catches it at the module edge, so no exception ever leaves the module.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace tessera::gpu::cudaimpl {

// A failed CUDA or cuBLAS call, or a request this device cannot serve; what() is the user message.
class CudaFailure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// "out of memory (cudaErrorMemoryAllocation)"
std::string describeCudaError(cudaError_t status);
// "CUBLAS_STATUS_NOT_SUPPORTED"
std::string describeCublasStatus(cublasStatus_t status);

// Throws CudaFailure("<call>: <description>") unless the call succeeded. A failed runtime call
// also clears the thread's last error, so it does not poison the next benchmark.
void checkCuda(cudaError_t status, std::string_view call);
void checkCublas(cublasStatus_t status, std::string_view call);

[[noreturn]] void fail(std::string message);

} // namespace tessera::gpu::cudaimpl
