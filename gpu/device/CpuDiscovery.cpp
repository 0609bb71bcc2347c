// SPDX-License-Identifier: Apache-2.0
#include "device/CpuDiscovery.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <unistd.h>

namespace tessera::gpu {

namespace {

std::string readFile(const char* path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string trim(std::string s) {
    const auto first = s.find_first_not_of(" \t");
    const auto last = s.find_last_not_of(" \t\r\n");
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

SimdLevel detectSimd(CpuInfo& cpu) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    cpu.fma = __builtin_cpu_supports("fma");
    if (__builtin_cpu_supports("avx512f"))
        return SimdLevel::Avx512;
    if (__builtin_cpu_supports("avx2"))
        return SimdLevel::Avx2;
    if (__builtin_cpu_supports("avx"))
        return SimdLevel::Avx;
    if (__builtin_cpu_supports("sse4.2"))
        return SimdLevel::Sse42;
    return SimdLevel::Scalar;
#elif defined(__aarch64__)
    cpu.fma = true;
    return SimdLevel::Neon;
#else
    return SimdLevel::Scalar;
#endif
}

double readMaxClockGhz() {
    // cpufreq is absent in most VMs; /proc/cpuinfo's "cpu MHz" is the fallback.
    const std::string khz = readFile("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    if (!khz.empty()) {
        try {
            return std::stod(khz) / 1e6;
        } catch (...) {
        }
    }
    return 0;
}

// The clock the cores actually run at (turbo included, which a VM's cpuinfo hides): time a
// chain of dependent integer adds, one cycle each on every x86 core since the Pentium Pro.
double measureClockGhz() {
#if defined(__x86_64__)
    // A chain of dependent multiplies: 3 cycles each on every x86-64 core of the last decade. (A chain of
    // `add $1` measured 13 GHz on a Xeon whose renamer folds immediate adds: they took no cycle at all.)
    constexpr long kIterations = 5'000'000;
    constexpr double kCyclesPerIteration = 4 * 3.0;
    double best = 0;
    for (int run = 0; run < 3; ++run) {
        long x = 1;
        const long one = 1;
        const auto start = std::chrono::steady_clock::now();
        for (long i = 0; i < kIterations; ++i)
            asm volatile("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0" : "+r"(x) : "r"(one));
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (s > 0)
            best = std::max(best, kCyclesPerIteration * kIterations / s / 1e9);
    }
    return best;
#else
    return 0;
#endif
}

} // namespace

std::string_view simdLevelName(SimdLevel level) {
    switch (level) {
    case SimdLevel::Scalar:
        return "scalar";
    case SimdLevel::Sse42:
        return "sse4.2";
    case SimdLevel::Avx:
        return "avx";
    case SimdLevel::Avx2:
        return "avx2";
    case SimdLevel::Avx512:
        return "avx512";
    case SimdLevel::Neon:
        return "neon";
    }
    return "?";
}

void parseCpuInfo(const std::string& text, CpuInfo& cpu) {
    std::istringstream in(text);
    std::string line;
    std::set<std::pair<std::string, std::string>> cores; // (physical id, core id)
    std::string physicalId;
    int processors = 0;
    double mhz = 0;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string key = trim(line.substr(0, colon));
        const std::string value = trim(line.substr(colon + 1));
        if (key == "processor")
            ++processors;
        else if (key == "model name" && cpu.model.empty())
            cpu.model = value;
        else if (key == "vendor_id" && cpu.vendor.empty())
            cpu.vendor = value;
        else if (key == "physical id")
            physicalId = value;
        else if (key == "core id")
            cores.emplace(physicalId, value);
        else if (key == "cpu MHz" && mhz == 0) {
            try {
                mhz = std::stod(value);
            } catch (...) {
            }
        } else if (key == "CPU implementer" && cpu.vendor.empty()) // arm64
            cpu.vendor = "ARM (" + value + ")";
    }
    if (processors > 0)
        cpu.logicalCores = processors;
    if (!cores.empty())
        cpu.physicalCores = static_cast<int>(cores.size());
    if (cpu.clockGhz == 0 && mhz > 0)
        cpu.clockGhz = mhz / 1000.0;
}

void parseMemInfo(const std::string& text, CpuInfo& cpu) {
    std::istringstream in(text);
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib) {
        std::getline(in, unit);
        if (key == "MemTotal:")
            cpu.memoryTotalBytes = kib * 1024;
        else if (key == "MemAvailable:")
            cpu.memoryAvailableBytes = kib * 1024;
    }
}

int fp32FlopsPerCycle(const std::string& vendor, int family, SimdLevel simd, bool fma) {
    // Lanes of fp32 per vector instruction the core actually executes per pipe.
    int lanes = 1;
    switch (simd) {
    case SimdLevel::Avx512:
        // Zen 4 runs AVX-512 as two 256-bit halves; Zen 5 (family 0x1a) and Intel have full width.
        lanes = (vendor == "AuthenticAMD" && family < 0x1a) ? 8 : 16;
        break;
    case SimdLevel::Avx2:
    case SimdLevel::Avx:
        lanes = 8;
        break;
    case SimdLevel::Sse42:
    case SimdLevel::Neon:
        lanes = 4;
        break;
    case SimdLevel::Scalar:
        lanes = 1;
        break;
    }
    // Two FMA pipes per core on every x86 core since Haswell / Zen and on big ARM cores;
    // an FMA counts as two FLOP. Without FMA: one add pipe and one multiply pipe.
    const int pipes = 2;
    return fma ? pipes * lanes * 2 : pipes * lanes;
}

CpuInfo discoverCpu() {
    CpuInfo cpu;
    cpu.simd = detectSimd(cpu);
    cpu.clockGhz = std::max(readMaxClockGhz(), measureClockGhz());
    const std::string cpuinfo = readFile("/proc/cpuinfo");
    parseCpuInfo(cpuinfo, cpu);
    parseMemInfo(readFile("/proc/meminfo"), cpu);
#if defined(__x86_64__) || defined(__i386__)
    cpu.avx512Bf16 = cpuinfo.find(" avx512_bf16") != std::string::npos;
#endif
    if (cpu.logicalCores == 0)
        cpu.logicalCores = static_cast<int>(std::thread::hardware_concurrency());
    if (cpu.physicalCores == 0)
        cpu.physicalCores = cpu.logicalCores;
    if (cpu.memoryTotalBytes == 0) {
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long pageSize = sysconf(_SC_PAGESIZE);
        if (pages > 0 && pageSize > 0)
            cpu.memoryTotalBytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(pageSize);
    }
    int family = 0;
    const auto pos = cpuinfo.find("cpu family");
    if (pos != std::string::npos) {
        const auto colon = cpuinfo.find(':', pos);
        try {
            family = std::stoi(cpuinfo.substr(colon + 1, 8));
        } catch (...) {
        }
    }
    if (cpu.model.empty())
        cpu.model = "unknown CPU";
    cpu.fp32FlopsPerCycle = fp32FlopsPerCycle(cpu.vendor, family, cpu.simd, cpu.fma);
    return cpu;
}

} // namespace tessera::gpu
