// SPDX-License-Identifier: Apache-2.0
#pragma once
// How a benchmark case is repeated and summarised: warm-up, timed repetitions within a
// time budget, median reported. Shared by the CPU benchmark and the CUDA backend.

#include <algorithm>
#include <chrono>
#include <vector>

namespace tessera::gpu {

struct RepeatPolicy {
    int warmups = 2;
    int minRepeats = 3;
    int maxRepeats = 50;
    double budgetSeconds = 1.0; // stop repeating once this much time was spent timing
};

struct BenchSample {
    std::vector<double> seconds; // one entry per timed repetition
    double median() const {
        if (seconds.empty())
            return 0;
        std::vector<double> s = seconds;
        std::sort(s.begin(), s.end());
        const std::size_t n = s.size();
        return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    }
    int repeats() const { return static_cast<int>(seconds.size()); }
};

// Runs `once` (which returns the seconds one repetition took) under the policy.
template <class Once>
BenchSample repeatTimed(const RepeatPolicy& policy, Once&& once) {
    for (int i = 0; i < policy.warmups; ++i)
        once();
    BenchSample sample;
    double spent = 0;
    while (sample.repeats() < policy.maxRepeats &&
           (sample.repeats() < policy.minRepeats || spent < policy.budgetSeconds)) {
        const double s = once();
        sample.seconds.push_back(s);
        spent += s;
    }
    return sample;
}

// Wall-clock seconds of a host-synchronous call.
template <class Fn>
double wallSeconds(Fn&& fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace tessera::gpu
