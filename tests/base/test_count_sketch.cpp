// SPDX-License-Identifier: Apache-2.0
// CountSketch: equal vectors give equal sketches however they are cut; inner products of sketches
// estimate the vectors' within the promised spread (a share check tells +g from −g, and a share that
// holds a gradient from one that does not); other seeds spread the values differently; an answer of
// another size is refused.
#include "GpuTest.h"
#include "base/CountSketch.h"

#include <cmath>
#include <random>
#include <vector>

using namespace tessera::gpu;

namespace {

std::vector<float> noise(std::size_t n, std::uint32_t seed, float sigma = 0.01f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

CountSketch of(const std::vector<float>& v, std::uint64_t seed, std::size_t chunk, int buckets = 4096) {
    CountSketch s(seed, buckets);
    for (std::size_t at = 0; at < v.size(); at += chunk)
        s.add(std::span(v).subspan(at, std::min(chunk, v.size() - at)));
    return s;
}

double exactDot(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        sum += double(a[i]) * b[i];
    return sum;
}

} // namespace

TESSERA_TEST(chunkingDoesNotChangeIt) {
    const std::vector<float> v = noise(100'003, 1);
    const CountSketch whole = of(v, 42, v.size());
    for (const std::size_t chunk : {1ul, 7ul, 4096ul, 33'333ul}) {
        const CountSketch s = of(v, 42, chunk);
        CHECK(s.count() == 100'003);
        CHECK(s.buckets() == whole.buckets());
    }
}

TESSERA_TEST(innerProductsAreEstimatedWithinTheirSpread) {
    // 1M values: a gradient g, another microbatch's h (correlated 0.3 with it), and their mean.
    const std::size_t n = 1'000'000;
    const std::vector<float> g = noise(n, 2), other = noise(n, 3);
    std::vector<float> h(n), mean(n), flipped(n);
    for (std::size_t i = 0; i < n; ++i) {
        h[i] = 0.3f * g[i] + 0.95f * other[i];
        mean[i] = 0.5f * (g[i] + h[i]);
        flipped[i] = -9.0f * mean[i];
    }
    int within = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const CountSketch sg = of(g, seed, 65'536), sm = of(mean, seed, 65'536), sf = of(flipped, seed, 65'536);
        const double truth = exactDot(g, mean);
        const double spread = std::sqrt(exactDot(g, g) * exactDot(mean, mean)) * std::sqrt(2.0 / 4096);
        within += std::abs(sg.dot(sm) - truth) <= 3 * spread;
        // The sign of a share's product with one of its microbatches' gradients is never mistaken.
        CHECK(sg.dot(sm) > 0);
        CHECK(sg.dot(sf) < 0);
        CHECK(std::abs(sg.squaredNorm() / exactDot(g, g) - 1) < 0.1);
    }
    CHECK(within >= 19);
}

TESSERA_TEST(anotherSeedSpreadsTheValuesOtherwise) {
    const std::vector<float> v = noise(50'000, 4);
    const CountSketch a = of(v, 1, 1000), b = of(v, 2, 1000);
    CHECK(a.buckets() != b.buckets());
    CHECK(a.dot(b) == 0); // sketches under other seeds are not comparable: no estimate
}

TESSERA_TEST(anAnswerOfAnotherSizeIsRefused) {
    CountSketch s(5, 64);
    CHECK(!s.assign(std::vector<float>(63, 1.0f)));
    CHECK(s.assign(std::vector<float>(64, 1.0f)));
    CHECK(s.squaredNorm() == 64.0);
    CHECK(CountSketch(1, 0).buckets().size() == 1); // clamped, never empty
}
