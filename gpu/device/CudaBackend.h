// SPDX-License-Identifier: Apache-2.0
#pragma once
// CudaBackend: our own CUDA code (cuBLAS GEMM, bandwidth kernels, the CUDA runtime's view of
// the devices), built as a separate module so that tessera runs on machines without CUDA
// libraries. loadCudaBackend() finds and dlopens it; no driver or no module is an error
// message, never a crash.

#include "base/Dtype.h"
#include "base/Result.h"
#include "device/BenchTiming.h"
#include "device/DeviceInfo.h"

#include <cstddef>
#include <memory>

namespace tessera::gpu {

class CudaBackend {
public:
    // Bumped whenever this interface changes; the module refuses a different one.
    static constexpr int kAbiVersion = 1;

    virtual ~CudaBackend() = default;

    virtual int runtimeVersion() const = 0; // e.g. 13000
    virtual int driverVersion() const = 0;  // 0 when no driver is installed

    // Devices as the CUDA runtime sees them (fills name, memory, compute capability, PCI id).
    virtual Result<int> deviceCount() = 0;
    virtual Result<CudaDeviceInfo> deviceInfo(int device) = 0;

    // C = A·B with A m×k, B k×n, inputs and output in `dtype` (fp32 accumulate; fp32 runs
    // without TF32). One sample per repetition, timed with CUDA events.
    virtual Result<BenchSample> gemm(int device, Dtype dtype, int m, int n, int k,
                                     const RepeatPolicy& policy) = 0;
    // Device memory bandwidth: a copy kernel of our own over `bytes` (reads + writes 2×bytes).
    virtual Result<BenchSample> deviceCopy(int device, std::size_t bytes, const RepeatPolicy& policy) = 0;
    // Pinned host → device and device → host copies of `bytes`.
    virtual Result<BenchSample> hostToDevice(int device, std::size_t bytes, const RepeatPolicy& policy) = 0;
    virtual Result<BenchSample> deviceToHost(int device, std::size_t bytes, const RepeatPolicy& policy) = 0;

    // Runs the GEMM the benchmark times on fixed seeded inputs and returns the largest
    // relative error against a CPU reference (the test-backend-ops check).
    virtual Result<double> gemmMaxRelativeError(int device, Dtype dtype, int m, int n, int k) = 0;
};

// Looks for the module in $TESSERA_CUDA_BACKEND, next to the executable, and in
// ../lib/tessera relative to it.
Result<std::shared_ptr<CudaBackend>> loadCudaBackend();

} // namespace tessera::gpu

// The module's single entry point; returns nullptr when the ABI does not match.
extern "C" tessera::gpu::CudaBackend* tessera_cuda_backend_create(int abiVersion);
