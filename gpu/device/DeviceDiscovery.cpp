// SPDX-License-Identifier: Apache-2.0
#include "device/DeviceDiscovery.h"

#include "device/CpuDiscovery.h"
#include "device/CudaBackend.h"
#include "device/Nvml.h"

namespace tessera::gpu {

namespace {

std::string plural(int n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Fills what NVML knows and the CUDA runtime does not (driver-side facts and telemetry).
void mergeNvml(const Nvml& nvml, CudaDeviceInfo& device, bool telemetry) {
    auto index = nvml.indexOfPciBusId(device.pciBusId);
    if (!index)
        return;
    auto info = nvml.deviceInfo(*index);
    if (info) {
        if (device.uuid.empty())
            device.uuid = info->uuid;
        if (device.clockMhz == 0)
            device.clockMhz = info->clockMhz;
        device.source += "+nvml";
    }
    if (telemetry) {
        auto t = nvml.telemetry(*index);
        if (t)
            device.telemetry = std::move(*t);
    }
}

} // namespace

std::string cudaVersionString(int version) {
    if (version <= 0)
        return "none";
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

DeviceReport discoverDevices(const DiscoveryOptions& options) {
    DeviceReport report;
    report.cpu = discoverCpu();

    std::unique_ptr<Nvml> nvml;
    if (options.useNvml) {
        auto loaded = Nvml::load();
        if (loaded) {
            nvml = std::move(*loaded);
            report.nvmlAvailable = true;
            report.driverVersion = nvml->driverVersion();
            report.cudaDriverVersion = nvml->cudaDriverVersion();
            const auto count = nvml->deviceCount();
            report.nvmlStatus = "NVML loaded, driver " +
                                (report.driverVersion.empty() ? "?" : report.driverVersion) + ", " +
                                (count ? plural(*count, "GPU") : count.message());
        } else {
            report.nvmlStatus = loaded.message();
        }
    } else {
        report.nvmlStatus = "NVML not used";
    }

    if (options.useCuda) {
        auto backend = loadCudaBackend();
        if (!backend) {
            report.cudaStatus = backend.message();
        } else {
            CudaBackend& cuda = **backend;
            report.cudaRuntimeVersion = cuda.runtimeVersion();
            if (cuda.driverVersion() > 0)
                report.cudaDriverVersion = cuda.driverVersion();
            const auto count = cuda.deviceCount();
            if (!count) {
                report.cudaStatus = count.message();
            } else {
                report.cudaBackendAvailable = *count > 0;
                report.cudaStatus = "CUDA runtime " + cudaVersionString(report.cudaRuntimeVersion) +
                                    ", driver " + cudaVersionString(report.cudaDriverVersion) + ", " +
                                    plural(*count, "device");
                for (int i = 0; i < *count; ++i) {
                    auto info = cuda.deviceInfo(i);
                    if (!info) {
                        report.cudaStatus += "; cuda:" + std::to_string(i) + ": " + info.message();
                        continue;
                    }
                    if (nvml)
                        mergeNvml(*nvml, *info, options.telemetry);
                    report.cudaDevices.push_back(std::move(*info));
                }
            }
        }
    } else {
        report.cudaStatus = "CUDA not used";
    }

    // Without our CUDA runtime, NVML alone still says what the GPUs are (NVML's order is PCI
    // order, which is CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID).
    if (report.cudaDevices.empty() && nvml) {
        const auto count = nvml->deviceCount();
        for (int i = 0; count && i < *count; ++i) {
            auto info = nvml->deviceInfo(i);
            if (!info)
                continue;
            if (options.telemetry) {
                auto t = nvml->telemetry(i);
                if (t)
                    info->telemetry = std::move(*t);
            }
            report.cudaDevices.push_back(std::move(*info));
        }
    }
    return report;
}

} // namespace tessera::gpu
