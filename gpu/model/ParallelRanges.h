// SPDX-License-Identifier: Apache-2.0
#pragma once
// parallelRanges: [0, count) cut into one range per intra-op thread (at::get_num_threads(): what
// OMP_NUM_THREADS or setComputeThreads allow), each run on its own std::thread. Not at::parallel_for:
// with ATen's OpenMP backend its parallel region is a pragma in ATen's header, which gpu/'s translation
// units (not built with -fopenmp) compile as a plain loop — measured: 100 M seeded values took 3.2 s with
// one thread or two, and an 8b engine's weights ~1 minute on 16 cores. Internal to gpu/ (includes torch).

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace tessera::gpu {

// fn(begin, end) on disjoint ranges covering [0, count), each at least `grain` long but the last; every
// range is done when it returns. fn must not throw.
template <class Fn>
void parallelRanges(std::int64_t count, std::int64_t grain, Fn&& fn) {
    const std::int64_t threads = std::clamp<std::int64_t>(
        std::min<std::int64_t>(at::get_num_threads(), count / std::max<std::int64_t>(grain, 1)), 1, 256);
    if (threads <= 1) {
        if (count > 0)
            fn(std::int64_t(0), count);
        return;
    }
    const std::int64_t per = (count + threads - 1) / threads;
    std::vector<std::thread> pool;
    for (std::int64_t begin = per; begin < count; begin += per)
        pool.emplace_back([&fn, begin, end = std::min(count, begin + per)] { fn(begin, end); });
    fn(std::int64_t(0), std::min(count, per));
    for (std::thread& t : pool)
        t.join();
}

} // namespace tessera::gpu
