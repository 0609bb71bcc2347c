// SPDX-License-Identifier: Apache-2.0
#include "train/LearningRateSchedule.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace tessera::gpu {

double LearningRateSchedule::at(std::int64_t step) const {
    step = std::max<std::int64_t>(step, 1);
    if (warmupSteps > 0 && step <= warmupSteps)
        return peak * static_cast<double>(step) / static_cast<double>(warmupSteps);
    if (decay == Decay::None || decaySteps <= warmupSteps)
        return peak;
    const double progress =
        std::min(1.0, static_cast<double>(step - std::max<std::int64_t>(warmupSteps, 0)) /
                          static_cast<double>(decaySteps - std::max<std::int64_t>(warmupSteps, 0)));
    const double shape =
        decay == Decay::Cosine ? 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) : 1.0 - progress;
    return peak * (minRatio + (1.0 - minRatio) * shape);
}

const char* LearningRateSchedule::decayName() const {
    switch (decay) {
    case Decay::Cosine:
        return "cosine";
    case Decay::Linear:
        return "linear";
    case Decay::None:
        break;
    }
    return "none";
}

bool parseDecay(const char* text, LearningRateSchedule::Decay& out) {
    if (std::strcmp(text, "cosine") == 0)
        out = LearningRateSchedule::Decay::Cosine;
    else if (std::strcmp(text, "linear") == 0)
        out = LearningRateSchedule::Decay::Linear;
    else if (std::strcmp(text, "none") == 0)
        out = LearningRateSchedule::Decay::None;
    else
        return false;
    return true;
}

} // namespace tessera::gpu
