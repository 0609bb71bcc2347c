// SPDX-License-Identifier: Apache-2.0
// tessera-gpu-bench: the benchmark without Qt, for a GPU machine that builds gpu/ alone
// (-DTESSERA_GPU_ONLY=ON). tessera-node bench is the same command for users.
#include "device/BenchCommand.h"
#include "device/CudaBackend.h"

#include <cstring>
#include <iostream>
#include <string>

namespace {

int usage(std::ostream& out, int code) {
    out << "usage: tessera-gpu-bench [--json] [--device cpu|cuda:N]... [--seconds S] [--check]\n"
           "  --check  compare the CUDA GEMM of every dtype with a CPU reference first\n";
    return code;
}

int checkCuda(std::ostream& out) {
    auto cuda = tessera::gpu::loadCudaBackend();
    if (!cuda) {
        out << "check: " << cuda.message() << "\n";
        return 1;
    }
    auto count = (*cuda)->deviceCount();
    if (!count || *count == 0) {
        out << "check: " << (count ? "no CUDA device" : count.message()) << "\n";
        return 1;
    }
    int failures = 0;
    for (auto dtype : {tessera::gpu::Dtype::F32, tessera::gpu::Dtype::BF16, tessera::gpu::Dtype::F16}) {
        auto err = (*cuda)->gemmMaxRelativeError(0, dtype, 67, 45, 131);
        const double tolerance = dtype == tessera::gpu::Dtype::F32 ? 1e-5 : 1e-2;
        const bool ok = err && *err <= tolerance;
        failures += ok ? 0 : 1;
        out << "check cuda:0 gemm " << tessera::gpu::dtypeName(dtype) << ": "
            << (err ? std::to_string(*err) : err.message()) << (ok ? " ok" : " FAILED") << "\n";
    }
    return failures ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
    tessera::gpu::BenchOptions options;
    bool json = false;
    bool check = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--json")
            json = true;
        else if (arg == "--check")
            check = true;
        else if (arg == "--device" && i + 1 < argc)
            options.devices.emplace_back(argv[++i]);
        else if (arg == "--seconds" && i + 1 < argc)
            options.seconds = std::atof(argv[++i]);
        else if (arg == "--help" || arg == "-h")
            return usage(std::cout, 0);
        else
            return usage(std::cerr, 2);
    }
    if (check && checkCuda(std::cerr) != 0)
        return 1;
    return tessera::gpu::runBenchCommand(options, json, std::cout, std::cerr);
}
