// SPDX-License-Identifier: Apache-2.0
#include "device/Benchmark.h"

#include "device/CpuBenchmark.h"
#include "device/CudaBackend.h"

#include <cmath>
#include <cstdio>
#include <memory>

namespace tessera::gpu {

namespace {

// GEMM shapes of transformer blocks: tokens of a microbatch × model width × output width.
struct GemmShape {
    int m, k, n;
};
// A CPU node runs small microbatches; these finish in a fraction of a second on a laptop.
constexpr GemmShape kCpuShapes[] = {{512, 768, 3072}, {512, 4096, 4096}};
// small's MLP, 8b's attention projection, 8b's MLP (d=4096 -> 14336) at GPU microbatch sizes.
constexpr GemmShape kCudaShapes[] = {{4096, 768, 3072}, {8192, 4096, 4096}, {16384, 4096, 14336}};
constexpr std::size_t kMiB = 1024 * 1024;

using Measure = std::function<Result<BenchSample>(const RepeatPolicy&)>;

struct Case {
    std::string device, op, dtype, size;
    double work = 0; // FLOP for gemm, bytes moved for bandwidth
    bool isGemm = false;
    Measure measure;
    int series = -1; // cases of one series grow in size; a slow one stops the rest
};

std::string shapeName(const GemmShape& s) {
    return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
}

std::string bytesName(std::size_t bytes) {
    return std::to_string(bytes / kMiB) + "MiB";
}

void planCpu(std::vector<Case>& cases, std::vector<BenchSkip>& skipped, int& series) {
    for (Dtype dtype : {Dtype::F32, Dtype::BF16, Dtype::F16}) {
        if (!cpu::gemmSupported(dtype)) {
            skipped.push_back({"cpu", "gemm", std::string(dtypeName(dtype)), "",
                               "LibTorch has no " + std::string(dtypeName(dtype)) + " GEMM on this CPU"});
            continue;
        }
        ++series;
        for (const GemmShape& s : kCpuShapes)
            cases.push_back(
                {"cpu", "gemm", std::string(dtypeName(dtype)), shapeName(s), 2.0 * s.m * s.n * s.k, true,
                 [=](const RepeatPolicy& p) { return cpu::benchGemm(dtype, s.m, s.n, s.k, p); }, series});
    }
    const std::size_t bytes = 256 * kMiB;
    cases.push_back({"cpu", "memcpy", "bytes", bytesName(bytes), 2.0 * bytes, false,
                     [=](const RepeatPolicy& p) { return cpu::benchCopy(bytes, p); }, -1});
}

void planCuda(const CudaDeviceInfo& info, const std::shared_ptr<CudaBackend>& cuda, std::vector<Case>& cases,
              std::vector<BenchSkip>& skipped, int& series) {
    const std::string device = "cuda:" + std::to_string(info.index);
    const int index = info.index;
    for (Dtype dtype : {Dtype::F32, Dtype::BF16, Dtype::F16}) {
        const bool supported = dtype == Dtype::F32 || (dtype == Dtype::BF16 && info.supportsBf16()) ||
                               (dtype == Dtype::F16 && info.supportsFp16());
        if (!supported) {
            skipped.push_back({device, "gemm", std::string(dtypeName(dtype)), "",
                               "compute capability " + std::to_string(info.computeMajor) + "." +
                                   std::to_string(info.computeMinor) + " has no fast " +
                                   std::string(dtypeName(dtype))});
            continue;
        }
        ++series;
        for (const GemmShape& s : kCudaShapes)
            cases.push_back(
                {device, "gemm", std::string(dtypeName(dtype)), shapeName(s), 2.0 * s.m * s.n * s.k, true,
                 [=](const RepeatPolicy& p) { return cuda->gemm(index, dtype, s.m, s.n, s.k, p); }, series});
    }
    const std::size_t deviceBytes = 1024 * kMiB;
    const std::size_t hostBytes = 256 * kMiB;
    cases.push_back({device, "memcpy", "bytes", bytesName(deviceBytes), 2.0 * deviceBytes, false,
                     [=](const RepeatPolicy& p) { return cuda->deviceCopy(index, deviceBytes, p); }, -1});
    cases.push_back({device, "h2d", "bytes", bytesName(hostBytes), double(hostBytes), false,
                     [=](const RepeatPolicy& p) { return cuda->hostToDevice(index, hostBytes, p); }, -1});
    cases.push_back({device, "d2h", "bytes", bytesName(hostBytes), double(hostBytes), false,
                     [=](const RepeatPolicy& p) { return cuda->deviceToHost(index, hostBytes, p); }, -1});
}

bool wanted(const BenchOptions& options, const std::string& device) {
    if (options.devices.empty())
        return true;
    for (const auto& d : options.devices)
        if (d == device)
            return true;
    return false;
}

} // namespace

Result<BenchReport> runBenchmark(const BenchOptions& options, const DeviceReport& devices) {
    for (const auto& d : options.devices) {
        if (d == "cpu")
            continue;
        bool found = false;
        for (const auto& info : devices.cudaDevices)
            found = found || d == "cuda:" + std::to_string(info.index);
        if (!found)
            return makeError("no device " + d + " (" +
                             (devices.cudaDevices.empty()
                                  ? devices.cudaStatus
                                  : "found: cuda:0..cuda:" + std::to_string(devices.cudaDevices.size() - 1)) +
                             ")");
    }
    if (!(options.seconds > 0))
        return makeError("the time budget must be positive");

    BenchReport report;
    report.version = TESSERA_VERSION;
    report.devices = devices;
    std::vector<Case> cases;
    int series = -1;
    if (wanted(options, "cpu"))
        planCpu(cases, report.skipped, series);
    for (const auto& info : devices.cudaDevices) {
        const std::string name = "cuda:" + std::to_string(info.index);
        if (!wanted(options, name))
            continue;
        auto cuda = loadCudaBackend();
        if (!cuda || !devices.cudaBackendAvailable) {
            report.skipped.push_back({name, "", "", "", cuda ? devices.cudaStatus : cuda.message()});
            continue;
        }
        planCuda(info, *cuda, cases, report.skipped, series);
    }

    const double perCase = options.seconds / std::max<std::size_t>(1, cases.size());
    std::vector<double> lastSecondsPerWork(series + 1, 0);
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const std::string label = c.device + " " + c.op + " " + c.dtype + " " + c.size;
        if (options.progress)
            options.progress(label, static_cast<int>(i + 1), static_cast<int>(cases.size()));
        RepeatPolicy policy;
        policy.budgetSeconds = perCase;
        policy.warmups = c.device == "cpu" ? 1 : 3;
        policy.maxRepeats = c.device == "cpu" ? 50 : 200;
        // A larger shape of a series that would blow the budget several times over is skipped
        // (and said so), not run: a slow laptop still finishes in about the time asked.
        if (c.series >= 0 && lastSecondsPerWork[c.series] > 0) {
            const double predicted = lastSecondsPerWork[c.series] * c.work;
            if (predicted * (policy.warmups + policy.minRepeats) > 3 * perCase) {
                char why[160];
                std::snprintf(why, sizeof why,
                              "one repetition would take ~%.2g s; raise --seconds to include it", predicted);
                report.skipped.push_back({c.device, c.op, c.dtype, c.size, why});
                continue;
            }
        }
        auto sample = c.measure(policy);
        if (!sample) {
            report.skipped.push_back({c.device, c.op, c.dtype, c.size, sample.message()});
            continue;
        }
        const double median = sample->median();
        BenchResult r{c.device, c.op, c.dtype, c.size, std::nullopt, std::nullopt, sample->repeats(), median};
        if (median > 0) {
            if (c.isGemm)
                r.gflops = c.work / median / 1e9;
            else
                r.gbps = c.work / median / 1e9;
        }
        if (c.series >= 0 && median > 0)
            lastSecondsPerWork[c.series] = median / c.work;
        report.results.push_back(std::move(r));
    }
    return report;
}

std::optional<BenchResult> BenchReport::bestGemm(const std::string& device) const {
    std::optional<BenchResult> best;
    for (const auto& r : results)
        if (r.device == device && r.op == "gemm" && r.gflops && (!best || *r.gflops > *best->gflops))
            best = r;
    return best;
}

} // namespace tessera::gpu
