// SPDX-License-Identifier: Apache-2.0
// NVML is loaded at run time: absent, broken or present, discovery reports and never crashes.
// "Present" is a fake libnvidia-ml (tests/gpu/fake_nvml.c) since this machine has no driver.
#include "GpuTest.h"
#include "device/DeviceDiscovery.h"
#include "device/Nvml.h"

#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace tessera::gpu;

namespace {

struct EnvOverride {
    EnvOverride(const char* name, const std::string& value)
        : m_name(name) {
        setenv(name, value.c_str(), 1);
    }
    ~EnvOverride() { unsetenv(m_name); }
    const char* m_name;
};

std::string ownProcessName() {
    std::ifstream in("/proc/self/comm");
    std::string name;
    std::getline(in, name);
    return name;
}

} // namespace

TESSERA_TEST(missingLibraryIsReportedNotFatal) {
    auto nvml = Nvml::load("/nonexistent/libnvidia-ml.so.1");
    CHECK(!nvml);
    CHECK_MSG(nvml.message().find("NVML not available") != std::string::npos, nvml.message());
    CHECK_MSG(nvml.message().find("libnvidia-ml.so.1") != std::string::npos, nvml.message());
}

TESSERA_TEST(fileThatIsNotALibraryIsReportedNotFatal) {
    const std::string path = "/tmp/tessera-test-not-a-library-" + std::to_string(getpid()) + ".so";
    std::ofstream(path) << "this is not an ELF file\n";
    auto nvml = Nvml::load(path);
    std::remove(path.c_str());
    CHECK(!nvml);
    CHECK_MSG(!nvml.message().empty(), "an empty reason");
}

TESSERA_TEST(libraryWithoutNvmlEntryPointsIsRefused) {
    auto nvml = Nvml::load("libm.so.6");
    CHECK(!nvml);
    CHECK_MSG(nvml.message().find("nvmlInit_v2") != std::string::npos, nvml.message());
}

TESSERA_TEST(discoveryWithoutNvmlStillReportsTheCpu) {
    EnvOverride nvml("TESSERA_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    const DeviceReport report = discoverDevices();
    CHECK(!report.nvmlAvailable);
    CHECK_MSG(report.nvmlStatus.find("NVML not available") != std::string::npos, report.nvmlStatus);
    CHECK(!report.cpu.model.empty());
    CHECK(!report.cudaStatus.empty());
}

TESSERA_TEST(readsDevicesAndTelemetryThroughNvml) {
    auto loaded = Nvml::load(FAKE_NVML_PATH);
    CHECK_MSG(loaded, loaded.message());
    const Nvml& nvml = **loaded;
    CHECK(nvml.driverVersion() == "555.42.06");
    CHECK(nvml.cudaDriverVersion() == 12050);
    CHECK(*nvml.deviceCount() == 2);

    auto gpu0 = nvml.deviceInfo(0);
    CHECK_MSG(gpu0, gpu0.message());
    CHECK(gpu0->name == "NVIDIA GeForce RTX 4070");
    CHECK(gpu0->pciBusId == "0000:01:00.0");
    CHECK(gpu0->totalMemoryBytes == 12878610432ull);
    CHECK(gpu0->freeMemoryBytes == 12878610432ull - (1ull << 30));
    CHECK(gpu0->computeMajor == 8 && gpu0->computeMinor == 9);
    CHECK(gpu0->supportsBf16());

    auto gpu1 = nvml.deviceInfo(1);
    CHECK(gpu1->computeMajor == 6 && !gpu1->supportsBf16() && gpu1->supportsFp16());
    CHECK(*nvml.indexOfPciBusId("0000:41:00.0") == 1);
    CHECK(!nvml.indexOfPciBusId("0000:99:00.0"));
    CHECK(!nvml.deviceInfo(2));

    auto t0 = nvml.telemetry(0);
    CHECK(t0->temperatureC == 64);
    CHECK(t0->utilizationPercent == 97);
    CHECK(t0->powerWatts == 183.5);
    CHECK(t0->powerLimitWatts == 200.0);
    CHECK(t0->graphicsProcesses.empty());

    // The pause rules look here for a game: our own process stands in for it on GPU 1.
    auto t1 = nvml.telemetry(1);
    CHECK(!t1->powerLimitWatts);
    CHECK_MSG(t1->graphicsProcesses.size() == 1, t1->graphicsProcesses.size());
    CHECK(t1->graphicsProcesses[0].pid == static_cast<unsigned>(getpid()));
    CHECK(t1->graphicsProcesses[0].usedMemoryBytes == (512ull << 20));
    CHECK_MSG(t1->graphicsProcesses[0].name == ownProcessName(), t1->graphicsProcesses[0].name);
}

TESSERA_TEST(discoveryListsNvmlDevicesWhenTheCudaRuntimeIsAbsent) {
    EnvOverride nvml("TESSERA_NVML_LIBRARY", FAKE_NVML_PATH);
    // Not TESSERA_CUDA_BACKEND=none: the backend is loaded once per process, and on a machine with a GPU
    // an earlier test has loaded the real one (which found the real GPU, not the stand-in's two).
    DiscoveryOptions withoutCuda;
    withoutCuda.useCuda = false;
    const DeviceReport report = discoverDevices(withoutCuda);
    CHECK(report.nvmlAvailable);
    CHECK(report.driverVersion == "555.42.06");
    CHECK_MSG(report.cudaDevices.size() == 2, report.cudaDevices.size());
    CHECK(report.cudaDevices[0].source == "nvml");
    CHECK(report.cudaDevices[1].index == 1);
    CHECK(report.cudaDevices[0].telemetry && report.cudaDevices[0].telemetry->temperatureC == 64);
    CHECK_MSG(report.nvmlStatus.find("2 GPUs") != std::string::npos, report.nvmlStatus);
}
