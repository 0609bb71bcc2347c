// SPDX-License-Identifier: Apache-2.0
#include "engine/GradientCombiner.h"

#include "train/GradientExchange.h"

#include <exception>

namespace tessera::gpu {

GradientCombiner::GradientCombiner(std::unique_ptr<GradientRoundCombiner> combiner)
    : m_combiner(std::move(combiner)) {}

GradientCombiner::~GradientCombiner() = default;

Result<std::unique_ptr<GradientCombiner>>
GradientCombiner::create(const std::vector<std::vector<std::int64_t>>& shapes, int rank, std::uint64_t seed,
                         int bits) {
    if (rank < 0 || rank > 1024)
        return makeError("the gradient exchange's rank must be within 0..1024, got " + std::to_string(rank));
    try {
        return std::unique_ptr<GradientCombiner>(new GradientCombiner(
            std::make_unique<GradientRoundCombiner>(GradientLayout(shapes, rank), seed, bits)));
    } catch (const std::exception& e) {
        return makeError(std::string("the gradient combiner: ") + e.what());
    }
}

int GradientCombiner::rank() const {
    return m_combiner->layout().rank();
}
int GradientCombiner::bits() const {
    return m_combiner->bits();
}
std::int64_t GradientCombiner::basisSize() const {
    return m_combiner->layout().basisSize();
}
std::int64_t GradientCombiner::shareSize() const {
    return m_combiner->layout().shareSize();
}
std::int64_t GradientCombiner::resultSize() const {
    return m_combiner->layout().resultSize();
}
std::int64_t GradientCombiner::gradientSize() const {
    return m_combiner->layout().gradientSize();
}
std::int64_t GradientCombiner::round() const {
    return m_combiner->round();
}

bool GradientCombiner::needsBasis() const {
    return m_combiner->layout().lowRank();
}
void GradientCombiner::reset() {
    m_combiner->reset();
}

Result<std::vector<float>> GradientCombiner::basis(std::span<const float> meanBasisShare) {
    try {
        return m_combiner->basis(meanBasisShare);
    } catch (const std::exception& e) {
        return makeError(std::string("the gradients' basis: ") + e.what());
    }
}

Result<std::vector<float>> GradientCombiner::result(std::span<const float> meanShare, double* squaredNorm) {
    try {
        return m_combiner->result(meanShare, squaredNorm);
    } catch (const std::exception& e) {
        return makeError(std::string("combining the gradients: ") + e.what());
    }
}

} // namespace tessera::gpu
