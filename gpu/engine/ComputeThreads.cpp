// SPDX-License-Identifier: Apache-2.0
// ComputeThreads: LibTorch's intra-op thread count, and OpenBLAS's own pool with it.
#include "engine/ComputeThreads.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <algorithm>

namespace tessera::gpu {

void setComputeThreads(int threads) {
    threads = std::max(threads, 1);
    at::set_num_threads(threads);
    // Debian's LibTorch calls the system BLAS; libopenblas0-pthread keeps a thread pool of its own
    // that at::set_num_threads does not reach, whose idle threads spin in sched_yield between
    // calls (perf of the coordinator in bench_trust: 68% of its CPU). Looked up, not linked: with
    // another BLAS there is no pool and no symbol.
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
        set(threads);
}

} // namespace tessera::gpu
