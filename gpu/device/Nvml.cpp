// SPDX-License-Identifier: Apache-2.0
#include "device/Nvml.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <vector>

#include <dlfcn.h>

namespace tessera::gpu {

namespace {

// The few NVML types we use, declared as nvml.h does (the driver's ABI, stable since R450).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
constexpr unsigned kNvmlTemperatureGpu = 0;
constexpr unsigned kNvmlClockSm = 1;

struct nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
struct nvmlUtilization_t {
    unsigned gpu;
    unsigned memory;
};
struct nvmlPciInfo_t {
    char busIdLegacy[16];
    unsigned domain;
    unsigned bus;
    unsigned device;
    unsigned pciDeviceId;
    unsigned pciSubSystemId;
    char busId[32];
};
// The _v3 process queries (R510+) return this; the unsuffixed (v1) ones the first two fields.
struct nvmlProcessInfo_t {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};
struct nvmlProcessInfoV1_t {
    unsigned pid;
    unsigned long long usedGpuMemory;
};

template <class T>
T symbol(void* handle, const char* name) {
    return reinterpret_cast<T>(dlsym(handle, name));
}

std::string processName(unsigned pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
}

std::string formatPciBusId(unsigned domain, unsigned bus, unsigned device) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", domain & 0xffffu, bus & 0xffu, device & 0xffu);
    return buf;
}

} // namespace

struct Nvml::Api {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char* (*errorString)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*driverVersion)(char*, unsigned) = nullptr;
    nvmlReturn_t (*cudaDriverVersion)(int*) = nullptr;
    nvmlReturn_t (*deviceCount)(unsigned*) = nullptr;
    nvmlReturn_t (*handleByIndex)(unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*pciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
    nvmlReturn_t (*memoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
    nvmlReturn_t (*computeCapability)(nvmlDevice_t, int*, int*) = nullptr;
    nvmlReturn_t (*maxClock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*temperature)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
    nvmlReturn_t (*powerUsage)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*powerLimit)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*graphicsProcessesV3)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
    nvmlReturn_t (*computeProcessesV3)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
    nvmlReturn_t (*graphicsProcessesV1)(nvmlDevice_t, unsigned*, nvmlProcessInfoV1_t*) = nullptr;
    nvmlReturn_t (*computeProcessesV1)(nvmlDevice_t, unsigned*, nvmlProcessInfoV1_t*) = nullptr;

    std::string describe(const char* call, nvmlReturn_t rc) const {
        const char* text = errorString ? errorString(rc) : nullptr;
        return std::string(call) + " failed: " + (text ? text : "NVML error " + std::to_string(rc));
    }

    Result<nvmlDevice_t> device(int index) const {
        nvmlDevice_t dev = nullptr;
        if (index < 0)
            return makeError("no NVML device " + std::to_string(index));
        const nvmlReturn_t rc = handleByIndex(static_cast<unsigned>(index), &dev);
        if (rc != kNvmlSuccess)
            return makeError(describe("nvmlDeviceGetHandleByIndex", rc));
        return dev;
    }

    // Asks for the list, growing the buffer while NVML says it is too small.
    template <class Info>
    std::vector<GpuProcess> processes(nvmlReturn_t (*query)(nvmlDevice_t, unsigned*, Info*),
                                      nvmlDevice_t dev) const {
        std::vector<GpuProcess> out;
        if (!query)
            return out;
        std::vector<Info> infos(16);
        for (int attempt = 0; attempt < 4; ++attempt) {
            unsigned count = static_cast<unsigned>(infos.size());
            const nvmlReturn_t rc = query(dev, &count, infos.data());
            if (rc == kNvmlErrorInsufficientSize) {
                infos.resize(std::max<std::size_t>(count, infos.size() * 2) + 4);
                continue;
            }
            if (rc != kNvmlSuccess)
                return out;
            for (unsigned i = 0; i < count && i < infos.size(); ++i) {
                GpuProcess p;
                p.pid = infos[i].pid;
                const unsigned long long used = infos[i].usedGpuMemory;
                p.usedMemoryBytes = used == std::numeric_limits<unsigned long long>::max() ? 0 : used;
                p.name = processName(p.pid);
                out.push_back(std::move(p));
            }
            return out;
        }
        return out;
    }
};

std::string Nvml::defaultLibraryPath() {
    const char* env = std::getenv("TESSERA_NVML_LIBRARY");
    return env && *env ? env : "libnvidia-ml.so.1";
}

Result<std::unique_ptr<Nvml>> Nvml::load(const std::string& libraryPath) {
    void* handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        return makeError("NVML not available (no NVIDIA driver?): " + std::string(why ? why : libraryPath));
    }
    auto api = std::make_unique<Api>();
    api->init = symbol<decltype(api->init)>(handle, "nvmlInit_v2");
    api->shutdown = symbol<decltype(api->shutdown)>(handle, "nvmlShutdown");
    api->errorString = symbol<decltype(api->errorString)>(handle, "nvmlErrorString");
    api->deviceCount = symbol<decltype(api->deviceCount)>(handle, "nvmlDeviceGetCount_v2");
    api->handleByIndex = symbol<decltype(api->handleByIndex)>(handle, "nvmlDeviceGetHandleByIndex_v2");
    if (!api->init || !api->shutdown || !api->deviceCount || !api->handleByIndex) {
        dlclose(handle);
        return makeError("NVML not usable: " + libraryPath +
                         " lacks nvmlInit_v2/nvmlDeviceGetCount_v2 (driver too old?)");
    }
    api->driverVersion = symbol<decltype(api->driverVersion)>(handle, "nvmlSystemGetDriverVersion");
    api->cudaDriverVersion =
        symbol<decltype(api->cudaDriverVersion)>(handle, "nvmlSystemGetCudaDriverVersion_v2");
    api->name = symbol<decltype(api->name)>(handle, "nvmlDeviceGetName");
    api->uuid = symbol<decltype(api->uuid)>(handle, "nvmlDeviceGetUUID");
    api->pciInfo = symbol<decltype(api->pciInfo)>(handle, "nvmlDeviceGetPciInfo_v3");
    api->memoryInfo = symbol<decltype(api->memoryInfo)>(handle, "nvmlDeviceGetMemoryInfo");
    api->computeCapability =
        symbol<decltype(api->computeCapability)>(handle, "nvmlDeviceGetCudaComputeCapability");
    api->maxClock = symbol<decltype(api->maxClock)>(handle, "nvmlDeviceGetMaxClockInfo");
    api->temperature = symbol<decltype(api->temperature)>(handle, "nvmlDeviceGetTemperature");
    api->utilization = symbol<decltype(api->utilization)>(handle, "nvmlDeviceGetUtilizationRates");
    api->powerUsage = symbol<decltype(api->powerUsage)>(handle, "nvmlDeviceGetPowerUsage");
    api->powerLimit = symbol<decltype(api->powerLimit)>(handle, "nvmlDeviceGetEnforcedPowerLimit");
    api->graphicsProcessesV3 =
        symbol<decltype(api->graphicsProcessesV3)>(handle, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    api->computeProcessesV3 =
        symbol<decltype(api->computeProcessesV3)>(handle, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!api->graphicsProcessesV3)
        api->graphicsProcessesV1 =
            symbol<decltype(api->graphicsProcessesV1)>(handle, "nvmlDeviceGetGraphicsRunningProcesses");
    if (!api->computeProcessesV3)
        api->computeProcessesV1 =
            symbol<decltype(api->computeProcessesV1)>(handle, "nvmlDeviceGetComputeRunningProcesses");

    const nvmlReturn_t rc = api->init();
    if (rc != kNvmlSuccess) {
        const std::string why = api->describe("nvmlInit", rc);
        dlclose(handle);
        return makeError("NVML not usable: " + why);
    }
    return std::unique_ptr<Nvml>(new Nvml(handle, std::move(api)));
}

Nvml::Nvml(void* handle, std::unique_ptr<Api> api)
    : m_handle(handle)
    , m_api(std::move(api)) {}

Nvml::~Nvml() {
    m_api->shutdown();
    dlclose(m_handle);
}

std::string Nvml::driverVersion() const {
    char buf[96] = {};
    if (m_api->driverVersion && m_api->driverVersion(buf, sizeof buf - 1) == kNvmlSuccess)
        return buf;
    return {};
}

int Nvml::cudaDriverVersion() const {
    int version = 0;
    if (m_api->cudaDriverVersion && m_api->cudaDriverVersion(&version) == kNvmlSuccess)
        return version;
    return 0;
}

Result<int> Nvml::deviceCount() const {
    unsigned count = 0;
    const nvmlReturn_t rc = m_api->deviceCount(&count);
    if (rc != kNvmlSuccess)
        return makeError(m_api->describe("nvmlDeviceGetCount", rc));
    return static_cast<int>(count);
}

Result<CudaDeviceInfo> Nvml::deviceInfo(int index) const {
    auto dev = m_api->device(index);
    if (!dev)
        return dev.error();
    CudaDeviceInfo info;
    info.index = index;
    info.source = "nvml";
    char buf[96] = {};
    if (m_api->name && m_api->name(*dev, buf, sizeof buf - 1) == kNvmlSuccess)
        info.name = buf;
    char uuid[96] = {};
    if (m_api->uuid && m_api->uuid(*dev, uuid, sizeof uuid - 1) == kNvmlSuccess)
        info.uuid = uuid;
    nvmlPciInfo_t pci{};
    if (m_api->pciInfo && m_api->pciInfo(*dev, &pci) == kNvmlSuccess)
        info.pciBusId = formatPciBusId(pci.domain, pci.bus, pci.device);
    nvmlMemory_t mem{};
    if (m_api->memoryInfo && m_api->memoryInfo(*dev, &mem) == kNvmlSuccess) {
        info.totalMemoryBytes = mem.total;
        info.freeMemoryBytes = mem.free;
    }
    if (m_api->computeCapability)
        m_api->computeCapability(*dev, &info.computeMajor, &info.computeMinor);
    unsigned mhz = 0;
    if (m_api->maxClock && m_api->maxClock(*dev, kNvmlClockSm, &mhz) == kNvmlSuccess)
        info.clockMhz = static_cast<int>(mhz);
    return info;
}

Result<GpuTelemetry> Nvml::telemetry(int index) const {
    auto dev = m_api->device(index);
    if (!dev)
        return dev.error();
    GpuTelemetry t;
    unsigned value = 0;
    if (m_api->temperature && m_api->temperature(*dev, kNvmlTemperatureGpu, &value) == kNvmlSuccess)
        t.temperatureC = static_cast<int>(value);
    nvmlUtilization_t util{};
    if (m_api->utilization && m_api->utilization(*dev, &util) == kNvmlSuccess) {
        t.utilizationPercent = static_cast<int>(util.gpu);
        t.memoryUtilizationPercent = static_cast<int>(util.memory);
    }
    if (m_api->powerUsage && m_api->powerUsage(*dev, &value) == kNvmlSuccess)
        t.powerWatts = value / 1000.0;
    if (m_api->powerLimit && m_api->powerLimit(*dev, &value) == kNvmlSuccess)
        t.powerLimitWatts = value / 1000.0;
    nvmlMemory_t mem{};
    if (m_api->memoryInfo && m_api->memoryInfo(*dev, &mem) == kNvmlSuccess)
        t.usedMemoryBytes = mem.used;
    t.graphicsProcesses = m_api->graphicsProcessesV3 ? m_api->processes(m_api->graphicsProcessesV3, *dev)
                                                     : m_api->processes(m_api->graphicsProcessesV1, *dev);
    t.computeProcesses = m_api->computeProcessesV3 ? m_api->processes(m_api->computeProcessesV3, *dev)
                                                   : m_api->processes(m_api->computeProcessesV1, *dev);
    return t;
}

Result<int> Nvml::indexOfPciBusId(const std::string& pciBusId) const {
    auto count = deviceCount();
    if (!count)
        return count.error();
    for (int i = 0; i < *count; ++i) {
        auto info = deviceInfo(i);
        if (info && info->pciBusId == pciBusId)
            return i;
    }
    return makeError("no NVML device at PCI " + pciBusId);
}

} // namespace tessera::gpu
