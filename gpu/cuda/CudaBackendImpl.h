// SPDX-License-Identifier: Apache-2.0
#pragma once
// CudaBackendImpl: the CudaBackend that libtessera-cuda.so hands out, built on the CUDA
// runtime and cuBLAS. Every method catches whatever the CUDA side throws and returns it as
// an Error, so nothing but Results crosses the dlopen boundary.
//
// gemmMaxRelativeError reports max |c - ref| / max |ref| over all elements of C, where ref is
// a double-precision product of the inputs exactly as rounded to the dtype. C itself comes
// back in the dtype, so expect about 2^-8 for bf16, 2^-11 for fp16 and 1e-6 for fp32.

#include "device/CudaBackend.h"

namespace tessera::gpu {

// The CUDA backend: device queries, cuBLAS GEMM, copy bandwidth and the GEMM accuracy check.
class CudaBackendImpl final : public CudaBackend {
public:
    int runtimeVersion() const override;
    int driverVersion() const override;

    Result<int> deviceCount() override;
    Result<CudaDeviceInfo> deviceInfo(int device) override;

    Result<BenchSample> gemm(int device, Dtype dtype, int m, int n, int k,
                             const RepeatPolicy& policy) override;
    Result<BenchSample> deviceCopy(int device, std::size_t bytes, const RepeatPolicy& policy) override;
    Result<BenchSample> hostToDevice(int device, std::size_t bytes, const RepeatPolicy& policy) override;
    Result<BenchSample> deviceToHost(int device, std::size_t bytes, const RepeatPolicy& policy) override;

    Result<double> gemmMaxRelativeError(int device, Dtype dtype, int m, int n, int k) override;

private:
    Result<BenchSample> hostTransfer(int device, std::size_t bytes, const RepeatPolicy& policy,
                                     bool toDevice);
};

} // namespace tessera::gpu
