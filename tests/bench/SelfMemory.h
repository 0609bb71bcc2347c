// SPDX-License-Identifier: Apache-2.0
#pragma once
// SelfMemory (benchmarks only): this process's resident memory now and at its peak since the last
// reset, from /proc/self/status (Linux; clear_refs 5 resets the peak). Standard C++ only, so the
// GPU-only benchmarks can use it.

#include <fstream>
#include <string>

namespace tessera::bench {

// A /proc/self/status line ("VmRSS:", "VmHWM:") in GiB; 0 when it is not there.
inline double selfStatusGiB(const char* key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key, 0) == 0)
            return std::stod(line.substr(std::string(key).size())) / (1024.0 * 1024.0);
    return 0;
}

inline void resetSelfPeak() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

} // namespace tessera::bench
