// SPDX-License-Identifier: Apache-2.0
#include "device/BenchCommand.h"

#include "device/DeviceDiscovery.h"

#include <ostream>

namespace tessera::gpu {

int runBenchCommand(BenchOptions options, bool json, std::ostream& out, std::ostream& err) {
    err << "Discovering devices...\n" << std::flush;
    const DeviceReport devices = discoverDevices();
    options.progress = [&err](const std::string& label, int index, int total) {
        err << "[" << index << "/" << total << "] " << label << "\n" << std::flush;
    };
    const auto report = runBenchmark(options, devices);
    if (!report) {
        err << "bench: " << report.message() << "\n";
        return 2;
    }
    out << (json ? report->toJson() : report->toTable()) << std::flush;
    return report->results.empty() ? 1 : 0;
}

} // namespace tessera::gpu
