// SPDX-License-Identifier: Apache-2.0
// Discovery of this machine's CPU reports values a volunteer would recognise.
#include "GpuTest.h"
#include "device/CpuDiscovery.h"

using namespace tessera::gpu;

TESSERA_TEST(reportsSaneValuesForThisMachine) {
    const CpuInfo cpu = discoverCpu();
    CHECK(!cpu.model.empty());
    CHECK_MSG(cpu.logicalCores >= 1 && cpu.logicalCores <= 4096, cpu.logicalCores);
    CHECK_MSG(cpu.physicalCores >= 1 && cpu.physicalCores <= cpu.logicalCores, cpu.physicalCores);
    CHECK_MSG(cpu.memoryTotalBytes > (256ull << 20), cpu.memoryTotalBytes);
    CHECK(cpu.memoryAvailableBytes > 0 && cpu.memoryAvailableBytes <= cpu.memoryTotalBytes);
    CHECK_MSG(cpu.clockGhz > 0.3 && cpu.clockGhz < 8.0, cpu.clockGhz);
    CHECK(cpu.fp32FlopsPerCycle >= 1);
    CHECK(cpu.peakFp32Gflops() > 0);
#if defined(__x86_64__)
    CHECK_MSG(cpu.simd != SimdLevel::Scalar, "every x86-64 CPU LibTorch runs on has SSE4.2 or better");
#endif
}

TESSERA_TEST(countsPhysicalCoresOfAHyperThreadedTwoSocketMachine) {
    // Two sockets, two cores each, two threads per core: 8 processors, 4 cores.
    std::string text;
    int processor = 0;
    for (int socket = 0; socket < 2; ++socket)
        for (int core = 0; core < 2; ++core)
            for (int thread = 0; thread < 2; ++thread)
                text += "processor\t: " + std::to_string(processor++) +
                        "\nvendor_id\t: GenuineIntel\n"
                        "model name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\ncpu MHz\t\t: 2000.000\n"
                        "physical id\t: " +
                        std::to_string(socket) + "\ncore id\t\t: " + std::to_string(core) + "\n\n";
    CpuInfo cpu;
    parseCpuInfo(text, cpu);
    CHECK_MSG(cpu.logicalCores == 8, cpu.logicalCores);
    CHECK_MSG(cpu.physicalCores == 4, cpu.physicalCores);
    CHECK(cpu.model == "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
    CHECK(cpu.vendor == "GenuineIntel");
    CHECK(cpu.clockGhz == 2.0);
}

TESSERA_TEST(readsMemInfo) {
    CpuInfo cpu;
    parseMemInfo("MemTotal:       16303428 kB\nMemFree:         1000000 kB\nMemAvailable:   12000000 kB\n",
                 cpu);
    CHECK(cpu.memoryTotalBytes == 16303428ull * 1024);
    CHECK(cpu.memoryAvailableBytes == 12000000ull * 1024);
}

TESSERA_TEST(peakFollowsTheCoreMicroarchitecture) {
    // Zen 4 executes AVX-512 as two 256-bit halves: 2 pipes x 8 lanes x 2 = 32 FLOP/cycle.
    CHECK(fp32FlopsPerCycle("AuthenticAMD", 0x19, SimdLevel::Avx512, true) == 32);
    // Intel server cores with two 512-bit FMA units: 64.
    CHECK(fp32FlopsPerCycle("GenuineIntel", 6, SimdLevel::Avx512, true) == 64);
    CHECK(fp32FlopsPerCycle("GenuineIntel", 6, SimdLevel::Avx2, true) == 32);
    CHECK(fp32FlopsPerCycle("GenuineIntel", 6, SimdLevel::Avx, false) == 16);
    CpuInfo cpu;
    cpu.physicalCores = 8;
    cpu.fp32FlopsPerCycle = 32;
    cpu.clockGhz = 4.0;
    CHECK(cpu.peakFp32Gflops() == 1024.0);
}
