// SPDX-License-Identifier: Apache-2.0
// BenchReport's two renderings: the JSON document and the terminal table.
#include "device/Benchmark.h"

#include "base/JsonWriter.h"
#include "device/DeviceDiscovery.h"

#include <cstdio>
#include <sstream>

namespace tessera::gpu {

namespace {

std::string format(const char* fmt, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

std::string gib(std::uint64_t bytes) {
    return format("%.1f GiB", bytes / (1024.0 * 1024 * 1024));
}

std::string rate(const BenchResult& r) {
    if (r.gflops)
        return *r.gflops >= 1000 ? format("%.1f TFLOP/s", *r.gflops / 1000)
                                 : format("%.1f GFLOP/s", *r.gflops);
    if (r.gbps)
        return format("%.1f GB/s", *r.gbps);
    return "-";
}

void writeTelemetry(JsonWriter& w, const GpuTelemetry& t) {
    w.beginObject();
    w.field("temperature_c", t.temperatureC);
    w.field("utilization_percent", t.utilizationPercent);
    w.field("memory_utilization_percent", t.memoryUtilizationPercent);
    w.field("power_watts", t.powerWatts);
    w.field("power_limit_watts", t.powerLimitWatts);
    for (const auto* list : {&t.graphicsProcesses, &t.computeProcesses}) {
        w.key(list == &t.graphicsProcesses ? "graphics_processes" : "compute_processes");
        w.beginArray();
        for (const auto& p : *list) {
            w.beginObject();
            w.field("pid", std::uint64_t(p.pid));
            w.field("name", p.name);
            w.field("used_memory_bytes", p.usedMemoryBytes);
            w.endObject();
        }
        w.endArray();
    }
    w.endObject();
}

void writeDevices(JsonWriter& w, const DeviceReport& d) {
    w.key("devices");
    w.beginArray();
    const CpuInfo& c = d.cpu;
    w.beginObject();
    w.field("id", "cpu");
    w.field("kind", "cpu");
    w.field("name", c.model);
    w.field("vendor", c.vendor);
    w.field("cores", c.physicalCores);
    w.field("threads", c.logicalCores);
    w.field("memory_bytes", c.memoryTotalBytes);
    w.field("memory_available_bytes", c.memoryAvailableBytes);
    w.field("simd", simdLevelName(c.simd));
    w.field("fma", c.fma);
    w.field("avx512_bf16", c.avx512Bf16);
    w.field("clock_ghz", c.clockGhz);
    w.field("fp32_flops_per_cycle", c.fp32FlopsPerCycle);
    w.field("peak_fp32_gflops", c.peakFp32Gflops());
    w.endObject();
    for (const auto& g : d.cudaDevices) {
        w.beginObject();
        w.field("id", "cuda:" + std::to_string(g.index));
        w.field("kind", "cuda");
        w.field("name", g.name);
        w.field("uuid", g.uuid);
        w.field("pci_bus_id", g.pciBusId);
        w.field("memory_bytes", g.totalMemoryBytes);
        w.field("memory_free_bytes", g.freeMemoryBytes);
        w.field("compute_capability", std::to_string(g.computeMajor) + "." + std::to_string(g.computeMinor));
        w.field("multiprocessors", g.multiprocessors);
        w.field("clock_mhz", g.clockMhz);
        w.field("bf16", g.supportsBf16());
        w.field("fp16", g.supportsFp16());
        w.field("source", g.source);
        w.key("telemetry");
        if (g.telemetry)
            writeTelemetry(w, *g.telemetry);
        else
            w.null();
        w.endObject();
    }
    w.endArray();
    w.key("nvml");
    w.beginObject();
    w.field("available", d.nvmlAvailable);
    w.field("status", d.nvmlStatus);
    w.field("driver_version", d.driverVersion);
    w.endObject();
    w.key("cuda");
    w.beginObject();
    w.field("available", d.cudaBackendAvailable);
    w.field("status", d.cudaStatus);
    w.field("driver_version", cudaVersionString(d.cudaDriverVersion));
    w.field("runtime_version", cudaVersionString(d.cudaRuntimeVersion));
    w.endObject();
}

} // namespace

std::string BenchReport::toJson() const {
    JsonWriter w;
    w.beginObject();
    w.field("tessera_version", version);
    writeDevices(w, devices);
    w.key("results");
    w.beginArray();
    for (const auto& r : results) {
        w.beginObject();
        w.field("device", r.device);
        w.field("op", r.op);
        w.field("dtype", r.dtype);
        w.field("size", r.size);
        if (r.gflops)
            w.field("gflops", *r.gflops);
        if (r.gbps)
            w.field("gbps", *r.gbps);
        w.field("repeats", r.repeats);
        w.field("median_seconds", r.medianSeconds);
        w.endObject();
    }
    w.endArray();
    w.key("skipped");
    w.beginArray();
    for (const auto& s : skipped) {
        w.beginObject();
        w.field("device", s.device);
        w.field("op", s.op);
        w.field("dtype", s.dtype);
        w.field("size", s.size);
        w.field("reason", s.reason);
        w.endObject();
    }
    w.endArray();
    w.endObject();
    return w.str() + "\n";
}

std::string BenchReport::toTable() const {
    std::ostringstream out;
    const CpuInfo& c = devices.cpu;
    out << "Tessera " << version << " benchmark\n\n";
    out << "cpu      " << c.model << ": " << c.physicalCores << " cores / " << c.logicalCores << " threads, "
        << simdLevelName(c.simd) << (c.fma ? "+fma" : "") << ", " << format("%.2f GHz", c.clockGhz) << ", "
        << gib(c.memoryTotalBytes) << " RAM (" << gib(c.memoryAvailableBytes) << " free)\n"
        << "         peak fp32 " << format("%.0f GFLOP/s", c.peakFp32Gflops()) << " = " << c.physicalCores
        << " cores x " << c.fp32FlopsPerCycle << " FLOP/cycle x " << format("%.2f GHz", c.clockGhz) << "\n";
    for (const auto& g : devices.cudaDevices) {
        out << "cuda:" << g.index << "   " << g.name << ": " << gib(g.totalMemoryBytes) << " ("
            << gib(g.freeMemoryBytes) << " free), compute " << g.computeMajor << "." << g.computeMinor;
        if (g.telemetry && g.telemetry->temperatureC)
            out << ", " << *g.telemetry->temperatureC << " C";
        if (g.telemetry && g.telemetry->powerWatts)
            out << format(", %.0f W", *g.telemetry->powerWatts);
        out << "\n";
    }
    if (devices.cudaDevices.empty())
        out << "gpu      none found\n";
    out << "         NVML: " << devices.nvmlStatus << "\n         CUDA: " << devices.cudaStatus << "\n\n";

    char line[160];
    std::snprintf(line, sizeof line, "%-8s %-7s %-6s %-18s %16s %8s\n", "device", "op", "dtype", "size",
                  "median rate", "repeats");
    out << line;
    for (const auto& r : results) {
        std::snprintf(line, sizeof line, "%-8s %-7s %-6s %-18s %16s %8d\n", r.device.c_str(), r.op.c_str(),
                      r.dtype.c_str(), r.size.c_str(), rate(r).c_str(), r.repeats);
        out << line;
    }
    for (const auto& s : skipped)
        out << "skipped  " << s.device << (s.op.empty() ? "" : " " + s.op)
            << (s.dtype.empty() ? "" : " " + s.dtype) << (s.size.empty() ? "" : " " + s.size) << ": "
            << s.reason << "\n";
    return out.str();
}

} // namespace tessera::gpu
