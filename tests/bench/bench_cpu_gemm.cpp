// SPDX-License-Identifier: Apache-2.0
// bench_cpu_gemm: our CPU fp32 GEMM (what `tessera-node bench` times, through LibTorch)
// against OpenBLAS's cblas_sgemm called directly on the same shapes, and against this CPU's
// theoretical peak — measured side by side, interleaved, in one run. Prints ratios.
#include "device/CpuBenchmark.h"
#include "device/CpuDiscovery.h"

#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace tessera::gpu;

namespace {

BenchSample benchCblas(int m, int n, int k, const RepeatPolicy& policy) {
    std::vector<float> a(std::size_t(m) * k, 0.5f), b(std::size_t(k) * n, 0.25f), c(std::size_t(m) * n);
    return repeatTimed(policy, [&] {
        return wallSeconds([&] {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
                        0.0f, c.data(), n);
        });
    });
}

} // namespace

int main(int argc, char** argv) {
    const double budget = argc > 1 ? std::atof(argv[1]) : 2.0; // seconds per measurement
    const CpuInfo cpu = discoverCpu();
    std::printf("CPU: %s, %d cores, %s%s, measured clock %.2f GHz\n", cpu.model.c_str(), cpu.physicalCores,
                std::string(simdLevelName(cpu.simd)).c_str(), cpu.fma ? "+fma" : "", cpu.clockGhz);
    std::printf("peak fp32 = %d cores x %d FLOP/cycle x %.2f GHz = %.1f GFLOP/s\n", cpu.physicalCores,
                cpu.fp32FlopsPerCycle, cpu.clockGhz, cpu.peakFp32Gflops());
    std::printf("OpenBLAS: %s, %d threads\n\n", openblas_get_config(), openblas_get_num_threads());

    struct Shape {
        int m, k, n;
    };
    const Shape shapes[] = {{512, 768, 3072}, {512, 4096, 4096}, {2048, 2048, 2048}, {2048, 4096, 4096}};
    RepeatPolicy policy;
    policy.budgetSeconds = budget;
    std::printf("%-16s %14s %14s %10s %10s\n", "m x k x n", "tessera", "cblas_sgemm", "vs cblas", "vs peak");
    for (const Shape& s : shapes) {
        // Interleave two rounds of each so that clock drift and a noisy neighbour hit both alike.
        double ours = 0, theirs = 0;
        for (int round = 0; round < 2; ++round) {
            auto sample = cpu::benchGemm(Dtype::F32, s.m, s.n, s.k, policy);
            if (!sample) {
                std::fprintf(stderr, "%s\n", sample.message().c_str());
                return 1;
            }
            const double flop = 2.0 * s.m * s.n * s.k;
            ours = std::max(ours, flop / sample->median() / 1e9);
            theirs = std::max(theirs, flop / benchCblas(s.m, s.n, s.k, policy).median() / 1e9);
        }
        char shape[32];
        std::snprintf(shape, sizeof shape, "%dx%dx%d", s.m, s.k, s.n);
        std::printf("%-16s %8.1f GF/s %8.1f GF/s %9.1f%% %9.1f%%\n", shape, ours, theirs, 100 * ours / theirs,
                    100 * ours / cpu.peakFp32Gflops());
    }
    return 0;
}
