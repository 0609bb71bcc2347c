// SPDX-License-Identifier: Apache-2.0
#pragma once
// ParallelFor: a loop over [0, count) split into contiguous pieces on plain threads. For the
// seeded generators, whose work per element is a few dozen nanoseconds of scalar code: LibTorch's
// at::parallel_for compiles to a serial loop in translation units built without -fopenmp (its
// OpenMP region is a header pragma), which gpu/ is, so ~1 minute of an 8b stage's seeded weights
// ran on one core of a sixteen-core machine. The caller says how many threads (the node's compute
// throttle passes LibTorch's intra-op count); the calling thread takes the first piece.

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::gpu {

// fn(begin, end) over [0, count) in at most `threads` pieces of at least `grain` elements each
// (one piece, on the caller's thread, when count is small). The first exception a piece throws is
// rethrown here once every piece has ended. Each thread calls its own copy of fn, so fn should
// capture by value: a worker reading values on the caller's stack at every element ran at half
// speed beside the caller (two threads 1.1x, not 1.9x; most likely the cache lines the caller spills
// its registers to, shared).
template <class Fn>
void parallelFor(std::int64_t count, std::int64_t grain, int threads, const Fn& fn) {
    if (count <= 0)
        return;
    const std::int64_t byGrain =
        (count + std::max<std::int64_t>(grain, 1) - 1) / std::max<std::int64_t>(grain, 1);
    const auto pieces = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, byGrain));
    if (pieces == 1) {
        fn(std::int64_t{0}, count);
        return;
    }
    const std::int64_t each = (count + pieces - 1) / pieces;
    std::exception_ptr failure;
    std::mutex failureLock;
    const auto run = [&](const Fn& piece, std::int64_t begin) {
        try {
            piece(begin, std::min(count, begin + each));
        } catch (...) {
            const std::lock_guard lock(failureLock);
            if (!failure)
                failure = std::current_exception();
        }
    };
    {
        std::vector<std::jthread> workers;
        workers.reserve(static_cast<std::size_t>(pieces - 1));
        for (std::int64_t begin = each; begin < count; begin += each)
            workers.emplace_back([&run, begin, piece = fn] { run(piece, begin); });
        run(fn, 0);
    } // the workers join here
    if (failure)
        std::rethrow_exception(failure);
}

} // namespace tessera::gpu
