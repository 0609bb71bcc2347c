// SPDX-License-Identifier: Apache-2.0
#pragma once
// WeightFingerprint: a few numbers a node answers after a step to show it holds the stage's weights
// — their projections onto random ±1 vectors and their squared norm, in double. The vectors come
// from a seed the coordinator draws when it sends the step's update (from the system's random
// source), so no node can work the answer out before it holds the updated weights; the coordinator's
// checkpoint gives the same numbers in the same pass that applies the update (issue 41, item 2).
//
// The values are taken in parameter order (the shard's), a chunk at a time, each added in turn: the
// result does not depend on how the weights are cut into chunks, so weights equal to the bit give
// fingerprints equal to the bit (replicas that agree hold such weights). A weight moved by δ moves
// each projection by ±δ: any change of the weights by more than the tolerance's share of their norm
// shows in the projections with near certainty, whatever part of them it touches.

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace tessera::gpu {

class WeightFingerprint {
public:
    static constexpr int kProjections = 4;

    explicit WeightFingerprint(std::uint64_t seed = 0)
        : m_seed(seed) {}

    // Adds the next values of the weights, in parameter order.
    void add(std::span<const float> values);

    std::uint64_t seed() const { return m_seed; }
    std::int64_t count() const { return m_count; }
    const std::array<double, kProjections>& projections() const { return m_projections; }
    double squaredNorm() const { return m_squares; }

    // Whether `other` fingerprints the same weights: the same count, and every number within
    // 1e-9 of the weights' norm (weights equal to the bit agree exactly; the slack is for a
    // summation done elsewhere in another order).
    bool agrees(const WeightFingerprint& other) const;
    // The largest difference of a projection or of the norm, over the weights' norm.
    double relativeDifference(const WeightFingerprint& other) const;

    // "count p0 p1 p2 p3 norm²" (each number exact: %.17g); parse refuses anything else.
    std::string toText() const;
    static bool parse(const std::string& text, std::uint64_t seed, WeightFingerprint& out);

private:
    std::uint64_t m_seed;
    std::int64_t m_count = 0;
    std::array<double, kProjections> m_projections{};
    double m_squares = 0;
};

} // namespace tessera::gpu
