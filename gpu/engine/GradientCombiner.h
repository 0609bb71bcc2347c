// SPDX-License-Identifier: Apache-2.0
#pragma once
// GradientCombiner: the coordinator's side of a stage's gradient exchange behind a torch-free
// facade (train/GradientExchange): the sizes a share and a result must have, and from the
// replicas' weighted mean shares the basis of PowerSGD's first round (low rank only) and the result
// every replica applies, with the update's norm. round() is the round whose warm start the next
// shares must be built on.

#include "base/Result.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tessera::gpu {

class GradientRoundCombiner;

class GradientCombiner {
public:
    static Result<std::unique_ptr<GradientCombiner>>
    create(const std::vector<std::vector<std::int64_t>>& shapes, int rank, std::uint64_t seed, int bits = 32);
    ~GradientCombiner();

    int rank() const;
    int bits() const;               // what results travel in (base/BlockQuant), rounded by result()
    std::int64_t basisSize() const; // the first round's share and basis (0: everything dense)
    std::int64_t shareSize() const;
    std::int64_t resultSize() const;
    std::int64_t gradientSize() const;
    std::int64_t round() const;
    // Whether a share must be built on round()'s warm start, in two rounds (false when everything
    // travels dense: one round, and any replica's share counts).
    bool needsBasis() const;
    // Back to the seeded warm start (round 0): when no replica of the stage held the current one.
    void reset();
    // meanBasisShare: Σ m_r·P_r / Σ m_r over the replicas counted in the first round. The basis P̂
    // every replica builds its second share on.
    Result<std::vector<float>> basis(std::span<const float> meanBasisShare);
    // meanShare: Σ m_r·share_r / Σ m_r over the replicas counted. *squaredNorm: ‖update‖².
    Result<std::vector<float>> result(std::span<const float> meanShare, double* squaredNorm);

private:
    explicit GradientCombiner(std::unique_ptr<GradientRoundCombiner> combiner);
    std::unique_ptr<GradientRoundCombiner> m_combiner;
};

} // namespace tessera::gpu
