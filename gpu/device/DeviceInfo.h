// SPDX-License-Identifier: Apache-2.0
#pragma once
// Plain descriptions of this machine's compute devices, as discovery reports them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::gpu {

enum class SimdLevel { Scalar, Sse42, Avx, Avx2, Avx512, Neon };
std::string_view simdLevelName(SimdLevel level);

struct CpuInfo {
    std::string vendor;
    std::string model;
    int logicalCores = 0;
    int physicalCores = 0;
    std::uint64_t memoryTotalBytes = 0;
    std::uint64_t memoryAvailableBytes = 0;
    SimdLevel simd = SimdLevel::Scalar;
    bool fma = false;
    bool avx512Bf16 = false;
    double clockGhz = 0;       // highest of cpufreq's maximum and the measured running clock
    int fp32FlopsPerCycle = 0; // per core: FMA pipes x lanes x 2
    // cores x FLOP/cycle x clock; 0 when the clock is unknown.
    double peakFp32Gflops() const { return physicalCores * fp32FlopsPerCycle * clockGhz; }
};

struct GpuProcess {
    std::uint32_t pid = 0;
    std::uint64_t usedMemoryBytes = 0; // 0 when the driver does not say
    std::string name;                  // from /proc/PID/comm where readable
};

// What NVML says about a GPU right now (the pause rules read it continuously).
struct GpuTelemetry {
    std::optional<int> temperatureC;
    std::optional<int> utilizationPercent;
    std::optional<int> memoryUtilizationPercent;
    std::optional<double> powerWatts;
    std::optional<double> powerLimitWatts;
    std::optional<std::uint64_t> usedMemoryBytes;
    std::vector<GpuProcess> graphicsProcesses;
    std::vector<GpuProcess> computeProcesses;
};

struct CudaDeviceInfo {
    int index = 0; // CUDA ordinal (cuda:N)
    std::string name;
    std::string uuid;
    std::string pciBusId; // "0000:01:00.0"
    std::uint64_t totalMemoryBytes = 0;
    std::uint64_t freeMemoryBytes = 0;
    int computeMajor = 0;
    int computeMinor = 0;
    int multiprocessors = 0;
    int clockMhz = 0;
    std::string source; // "cuda-runtime", "nvml" or both joined by '+'
    std::optional<GpuTelemetry> telemetry;

    bool supportsBf16() const { return computeMajor >= 8; }
    bool supportsFp16() const { return computeMajor > 5 || (computeMajor == 5 && computeMinor >= 3); }
};

struct DeviceReport {
    CpuInfo cpu;
    std::vector<CudaDeviceInfo> cudaDevices;
    std::string driverVersion;  // NVIDIA driver, e.g. "570.86.15"; empty when unknown
    int cudaDriverVersion = 0;  // e.g. 12080 for CUDA 12.8; 0 when unknown
    int cudaRuntimeVersion = 0; // of our CUDA backend; 0 when not loaded
    bool nvmlAvailable = false;
    std::string nvmlStatus; // why NVML is or is not usable, in words
    bool cudaBackendAvailable = false;
    std::string cudaStatus; // why the CUDA backend is or is not usable, in words
};

} // namespace tessera::gpu
