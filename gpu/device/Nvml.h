// SPDX-License-Identifier: Apache-2.0
#pragma once
// Nvml: NVIDIA's management library, loaded at run time (libnvidia-ml.so.1 comes with the
// driver, not the toolkit) for device names, memory, temperature, utilization, power and
// the processes using each GPU. A machine without it gets an error message, not a crash.

#include "base/Result.h"
#include "device/DeviceInfo.h"

#include <memory>
#include <string>

namespace tessera::gpu {

class Nvml {
public:
    // $TESSERA_NVML_LIBRARY when set (tests point it at a fake), else libnvidia-ml.so.1.
    static std::string defaultLibraryPath();
    // dlopens the library and initialises NVML.
    static Result<std::unique_ptr<Nvml>> load(const std::string& libraryPath = defaultLibraryPath());

    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    std::string driverVersion() const; // empty when NVML does not say
    int cudaDriverVersion() const;     // e.g. 12080; 0 when NVML does not say

    Result<int> deviceCount() const;
    // Static facts of device `index` in NVML's order (which is PCI order, like CUDA's default).
    Result<CudaDeviceInfo> deviceInfo(int index) const;
    // What the device is doing now.
    Result<GpuTelemetry> telemetry(int index) const;
    // NVML index of the device at PCI bus id "0000:01:00.0"; error when none.
    Result<int> indexOfPciBusId(const std::string& pciBusId) const;

    struct Api; // the entry points, declared in Nvml.cpp

private:
    Nvml(void* handle, std::unique_ptr<Api> api);
    void* m_handle;
    std::unique_ptr<Api> m_api;
};

} // namespace tessera::gpu
