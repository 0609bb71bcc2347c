// SPDX-License-Identifier: Apache-2.0
#pragma once
// LearningRateSchedule: the learning rate every replica of the run applies at a step, set on the
// coordinator (torch-free).

#include <cstdint>

namespace tessera::gpu {

// Linear warm-up to `peak` over `warmupSteps`, then constant, or a decay to minRatio·peak at
// `decaySteps` (cosine or linear), constant after. Steps count from 1 (the first update).
struct LearningRateSchedule {
    enum class Decay { None, Cosine, Linear };
    double peak = 3e-3;
    std::int64_t warmupSteps = 20;
    Decay decay = Decay::None;
    std::int64_t decaySteps = 0; // the step the decay ends at (0 with a decay: no decay)
    double minRatio = 0.1;

    double at(std::int64_t step) const;
    // "none", "cosine" or "linear".
    const char* decayName() const;
};

// "cosine", "linear" or "none"; false for anything else.
bool parseDecay(const char* text, LearningRateSchedule::Decay& out);

} // namespace tessera::gpu
