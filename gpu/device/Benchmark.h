// SPDX-License-Identifier: Apache-2.0
#pragma once
// The benchmark a volunteer's machine runs before admission: GEMM throughput per dtype at
// transformer-block sizes, memory bandwidth, and host<->device bandwidth on CUDA.

#include "base/Result.h"
#include "device/DeviceInfo.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessera::gpu {

struct BenchOptions {
    std::vector<std::string> devices; // "cpu", "cuda:N"; empty = every device found
    double seconds = 10;              // total time budget, shared out over the cases
    // Called before each case: its label, 1-based index, and the number of cases.
    std::function<void(const std::string& label, int index, int total)> progress;
};

struct BenchResult {
    std::string device; // "cpu", "cuda:0"
    std::string op;     // "gemm", "memcpy", "h2d", "d2h"
    std::string dtype;  // "fp32", "bf16", "fp16"; "bytes" for bandwidth
    std::string size;   // "MxKxN" for gemm (tokens x in x out), "256MiB" for bandwidth
    std::optional<double> gflops;
    std::optional<double> gbps; // GB/s, 10^9 bytes
    int repeats = 0;
    double medianSeconds = 0;
};

struct BenchSkip {
    std::string device, op, dtype, size, reason;
};

struct BenchReport {
    std::string version;
    DeviceReport devices;
    std::vector<BenchResult> results;
    std::vector<BenchSkip> skipped;

    std::string toJson() const;  // {"devices":[...],"results":[...],...}
    std::string toTable() const; // what a person reads in a terminal
    // The best GEMM figure of a device, e.g. for "your RTX 4070: ~29 TFLOP/s bf16".
    std::optional<BenchResult> bestGemm(const std::string& device) const;
};

// Runs the benchmark. Fails only when the options name a device that does not exist.
Result<BenchReport> runBenchmark(const BenchOptions& options, const DeviceReport& devices);

} // namespace tessera::gpu
