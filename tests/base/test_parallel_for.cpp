// SPDX-License-Identifier: Apache-2.0
// parallelFor covers its range exactly once however it is split, uses the threads it is given, and a
// piece's failure reaches the caller only after every piece has ended.
#include "GpuTest.h"
#include "base/ParallelFor.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace tessera::gpu;

TESSERA_TEST(everyElementIsVisitedOnce) {
    struct Case {
        std::int64_t count, grain;
        int threads;
    };
    for (const Case c :
         {Case{0, 16, 4}, Case{1, 16, 4}, Case{15, 16, 4}, Case{17, 16, 4}, Case{100'003, 1 << 14, 2},
          Case{100'003, 1 << 14, 7}, Case{10, 1, 64}, Case{1000, 0, 3}, Case{1000, 10, 0}}) {
        std::vector<std::atomic<int>> visits(static_cast<std::size_t>(c.count));
        std::atomic<int> badPieces{0};
        parallelFor(c.count, c.grain, c.threads,
                    [&visits, &badPieces, c](std::int64_t begin, std::int64_t end) {
                        if (begin < 0 || end > c.count || begin >= end)
                            ++badPieces;
                        for (std::int64_t i = begin; i < end; ++i)
                            ++visits[static_cast<std::size_t>(i)];
                    });
        CHECK(badPieces == 0);
        int wrong = 0;
        for (const auto& v : visits)
            wrong += v != 1;
        CHECK_MSG(wrong == 0, wrong << " of " << c.count << " elements not visited exactly once (grain "
                                    << c.grain << ", " << c.threads << " threads)");
    }
}

TESSERA_TEST(theWorkIsSharedBetweenTheThreadsAsked) {
    std::mutex lock;
    std::set<std::thread::id> seen;
    std::atomic<int> arrived{0};
    std::atomic<int> metTheOthers{0};
    // Each piece waits (10 s at most) until all three have started: they meet only if they run at once.
    parallelFor(3 * 4096, 4096, 3, [&](std::int64_t, std::int64_t) {
        {
            const std::lock_guard guard(lock);
            seen.insert(std::this_thread::get_id());
        }
        ++arrived;
        const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (arrived < 3 && std::chrono::steady_clock::now() < giveUp)
            std::this_thread::yield();
        metTheOthers += arrived == 3;
    });
    CHECK(seen.size() == 3);
    CHECK(metTheOthers == 3);
    CHECK(seen.count(std::this_thread::get_id()) == 1); // the caller takes a piece

    seen.clear();
    parallelFor(4095, 4096, 8, [&](std::int64_t, std::int64_t) { seen.insert(std::this_thread::get_id()); });
    CHECK(seen.size() == 1); // under one grain: no thread is started
}

TESSERA_TEST(aFailingPieceIsRethrownOnceEveryPieceHasEnded) {
    std::atomic<std::int64_t> done{0};
    std::string caught;
    try {
        parallelFor(4 * 1000, 1000, 4, [&](std::int64_t begin, std::int64_t end) {
            if (begin == 2000)
                throw std::runtime_error("piece at 2000 failed");
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            done += end - begin;
        });
    } catch (const std::exception& e) {
        caught = e.what();
    }
    CHECK(caught == "piece at 2000 failed");
    CHECK(done == 3000); // the other three pieces finished before the error came back
}
