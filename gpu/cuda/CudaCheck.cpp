// SPDX-License-Identifier: Apache-2.0
#include "CudaCheck.h"

namespace tessera::gpu::cudaimpl {

std::string describeCudaError(cudaError_t status) {
    return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

std::string describeCublasStatus(cublasStatus_t status) {
    return cublasGetStatusName(status);
}

void checkCuda(cudaError_t status, std::string_view call) {
    if (status == cudaSuccess)
        return;
    (void)cudaGetLastError(); // non-sticky errors would otherwise resurface in a later check
    fail(std::string(call) + ": " + describeCudaError(status));
}

void checkCublas(cublasStatus_t status, std::string_view call) {
    if (status == CUBLAS_STATUS_SUCCESS)
        return;
    fail(std::string(call) + ": " + describeCublasStatus(status));
}

void fail(std::string message) {
    throw CudaFailure(message);
}

} // namespace tessera::gpu::cudaimpl
