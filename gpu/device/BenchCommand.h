// SPDX-License-Identifier: Apache-2.0
#pragma once
// The `bench` command shared by tessera-node and tessera-gpu-bench: discover, run with
// progress on `err`, print the table (or the JSON document) on `out`. Returns an exit code.

#include "device/Benchmark.h"

#include <iosfwd>

namespace tessera::gpu {

int runBenchCommand(BenchOptions options, bool json, std::ostream& out, std::ostream& err);

} // namespace tessera::gpu
