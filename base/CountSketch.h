// SPDX-License-Identifier: Apache-2.0
#pragma once
// CountSketch: a vector of a stage's size (a gradient, a share) folded into a few thousand numbers
// whose inner products estimate the vectors' — each value added, with a random sign, into one
// bucket picked by a splitmix of (seed, index). Two sketches under one seed give ⟨a, b⟩ without
// error in expectation and with a standard deviation of about ‖a‖·‖b‖·√(2 / buckets): at 4,096
// buckets, 2% of the norms' product. A share check (trust/ShareCheck, issue 41 item 4) compares a
// replica's sketch of one microbatch's weight gradient with the coordinator's sketch of a node's
// gradient share under a seed drawn after the share came, so no share can be shaped to it.
//
// Values are taken in parameter order (the exchange's), a chunk at a time, each added in turn in
// double: the sketch does not depend on how the vector is cut, so equal vectors give equal sketches.

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::gpu {

class CountSketch {
public:
    static constexpr int kDefaultBuckets = 4096;
    static constexpr int kMaxBuckets = 1 << 20;

    // buckets: 1..kMaxBuckets.
    explicit CountSketch(std::uint64_t seed = 0, int buckets = kDefaultBuckets);

    // Adds the next values of the vector, in parameter order.
    void add(std::span<const float> values);
    // Another's buckets as this sketch's (an answer read from the wire): false when the count differs.
    bool assign(std::span<const float> buckets);

    std::uint64_t seed() const { return m_seed; }
    std::int64_t count() const { return m_count; }
    const std::vector<double>& buckets() const { return m_buckets; }
    std::vector<float> bucketsAsFloats() const;

    // Estimates of ⟨this, other⟩ and ‖this‖² (the sketches must share the seed and the bucket count).
    double dot(const CountSketch& other) const;
    double squaredNorm() const { return dot(*this); }

private:
    std::uint64_t m_seed;
    std::int64_t m_count = 0;
    std::vector<double> m_buckets;
};

} // namespace tessera::gpu
