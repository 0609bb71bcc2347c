// SPDX-License-Identifier: Apache-2.0
// The benchmark measures this CPU for real: positive figures, repeated, medians reported, and
// clear errors for devices that do not exist.
#include "GpuTest.h"
#include "device/Benchmark.h"
#include "device/DeviceDiscovery.h"

using namespace tessera::gpu;

namespace {

const DeviceReport& devices() {
    static const DeviceReport report = discoverDevices();
    return report;
}

} // namespace

TESSERA_TEST(cpuResultsArePositiveAndRepeated) {
    BenchOptions options;
    options.devices = {"cpu"};
    options.seconds = 1.0;
    std::vector<std::string> progress;
    options.progress = [&](const std::string& label, int index, int total) {
        CHECK(index >= 1 && index <= total);
        progress.push_back(label);
    };
    auto report = runBenchmark(options, devices());
    CHECK_MSG(report, report.message());
    CHECK(!report->results.empty());
    CHECK(progress.size() ==
          report->results.size() + /* cases skipped for time */ (progress.size() - report->results.size()));
    bool sawFp32Gemm = false, sawMemcpy = false;
    for (const auto& r : report->results) {
        CHECK(r.device == "cpu");
        CHECK_MSG(r.repeats >= 3, r.op << " " << r.repeats);
        CHECK(r.medianSeconds > 0);
        if (r.op == "gemm") {
            CHECK(r.gflops && *r.gflops > 0.1 && !r.gbps);
            sawFp32Gemm = sawFp32Gemm || r.dtype == "fp32";
        } else {
            CHECK(r.op == "memcpy" && r.gbps && *r.gbps > 0.1 && !r.gflops);
            sawMemcpy = true;
        }
    }
    CHECK(sawFp32Gemm);
    CHECK(sawMemcpy);
    for (const auto& s : report->skipped)
        CHECK_MSG(!s.reason.empty(), s.device << " " << s.op);
    CHECK(report->bestGemm("cpu").has_value());
    CHECK(!report->bestGemm("cuda:0").has_value());
}

TESSERA_TEST(tableNamesTheCpuAndEveryResult) {
    BenchOptions options;
    options.devices = {"cpu"};
    options.seconds = 0.3;
    auto report = runBenchmark(options, devices());
    CHECK_MSG(report, report.message());
    const std::string table = report->toTable();
    CHECK(table.find(devices().cpu.model) != std::string::npos);
    CHECK(table.find("GFLOP/s") != std::string::npos);
    CHECK(table.find("GB/s") != std::string::npos);
    const std::string json = report->toJson();
    CHECK(json.front() == '{' && json.find("\"results\":[{\"device\":\"cpu\"") != std::string::npos);
}

TESSERA_TEST(unknownDeviceIsAClearError) {
    BenchOptions options;
    options.devices = {"cuda:7"};
    auto report = runBenchmark(options, devices());
    CHECK(!report);
    CHECK_MSG(report.message().find("no device cuda:7") != std::string::npos, report.message());
}

TESSERA_TEST(nonPositiveBudgetIsRefused) {
    BenchOptions options;
    options.devices = {"cpu"};
    options.seconds = 0;
    CHECK(!runBenchmark(options, devices()));
}
