// SPDX-License-Identifier: Apache-2.0
#pragma once
// Discovers the CPU and every CUDA device, from the CUDA runtime (our backend module) and
// NVML, whichever of them this machine has. Never fails: what is missing is said in words.

#include "device/DeviceInfo.h"

namespace tessera::gpu {

struct DiscoveryOptions {
    bool useNvml = true;
    bool useCuda = true;
    bool telemetry = true; // also read temperature, utilization, power and processes
};

DeviceReport discoverDevices(const DiscoveryOptions& options = {});

// "13.0" from 13000.
std::string cudaVersionString(int version);

} // namespace tessera::gpu
