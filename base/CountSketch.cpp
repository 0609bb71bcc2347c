// SPDX-License-Identifier: Apache-2.0
#include "base/CountSketch.h"

#include "base/SplitMix.h"

#include <algorithm>

namespace tessera::gpu {

CountSketch::CountSketch(std::uint64_t seed, int buckets)
    : m_seed(seed)
    , m_buckets(std::size_t(std::clamp(buckets, 1, kMaxBuckets)), 0.0) {}

void CountSketch::add(std::span<const float> values) {
    const std::uint64_t n = m_buckets.size();
    double* buckets = m_buckets.data();
    for (const float value : values) {
        const std::uint64_t h = splitMix64(m_seed ^ (std::uint64_t(m_count) * 0x9e3779b97f4a7c15ull));
        // The high 32 bits pick the bucket (multiply-shift: no division), the lowest the sign.
        const std::uint64_t bucket = ((h >> 32) * n) >> 32;
        buckets[bucket] += double(value) * double(int(h & 1u) * 2 - 1);
        ++m_count;
    }
}

bool CountSketch::assign(std::span<const float> buckets) {
    if (buckets.size() != m_buckets.size())
        return false;
    std::copy(buckets.begin(), buckets.end(), m_buckets.begin());
    return true;
}

std::vector<float> CountSketch::bucketsAsFloats() const {
    return std::vector<float>(m_buckets.begin(), m_buckets.end());
}

double CountSketch::dot(const CountSketch& other) const {
    if (other.m_buckets.size() != m_buckets.size() || other.m_seed != m_seed)
        return 0.0;
    double sum = 0;
    for (std::size_t i = 0; i < m_buckets.size(); ++i)
        sum += m_buckets[i] * other.m_buckets[i];
    return sum;
}

} // namespace tessera::gpu
