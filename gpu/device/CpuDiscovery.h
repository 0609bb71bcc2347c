// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads this machine's CPU: model, cores, memory, SIMD level and clock.

#include "device/DeviceInfo.h"

#include <string>

namespace tessera::gpu {

CpuInfo discoverCpu();

// Parses /proc/cpuinfo text (exposed for tests with recorded files).
void parseCpuInfo(const std::string& procCpuInfo, CpuInfo& cpu);
// Parses /proc/meminfo text into total and available bytes.
void parseMemInfo(const std::string& procMemInfo, CpuInfo& cpu);
// FLOP per cycle per core for fp32 FMA code on this vendor/family/SIMD level.
int fp32FlopsPerCycle(const std::string& vendor, int family, SimdLevel simd, bool fma);

} // namespace tessera::gpu
