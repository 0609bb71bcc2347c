// SPDX-License-Identifier: Apache-2.0
// WeightFingerprint: the same weights give the same numbers to the bit however they are cut into
// chunks; any change a liar could make to its weights — one weight nudged, all scaled by 1.001, zeros,
// a sign flipped, the weights of a step ago — disagrees; another seed gives other projections (no
// answer carries over); the text form reads back exactly and refuses anything else.
#include "GpuTest.h"
#include "base/WeightFingerprint.h"

#include <cmath>
#include <random>
#include <vector>

using namespace tessera::gpu;

namespace {

std::vector<float> weights(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w(n);
    for (float& v : w)
        v = normal(rng);
    return w;
}

WeightFingerprint of(const std::vector<float>& w, std::uint64_t seed, std::size_t chunk) {
    WeightFingerprint f(seed);
    for (std::size_t at = 0; at < w.size(); at += chunk)
        f.add(std::span(w).subspan(at, std::min(chunk, w.size() - at)));
    return f;
}

} // namespace

TESSERA_TEST(chunkingDoesNotChangeIt) {
    const std::vector<float> w = weights(100'003, 1);
    const WeightFingerprint whole = of(w, 42, w.size());
    for (const std::size_t chunk : {1ul, 7ul, 4096ul, 33'333ul}) {
        const WeightFingerprint f = of(w, 42, chunk);
        CHECK(f.count() == 100'003);
        CHECK(f.projections() == whole.projections());
        CHECK(f.squaredNorm() == whole.squaredNorm());
        CHECK(f.agrees(whole));
    }
}

TESSERA_TEST(everyChangeOfTheWeightsDisagrees) {
    const std::vector<float> honest = weights(200'000, 2);
    const WeightFingerprint reference = of(honest, 7, 5000);
    const auto changed = [&](auto edit) {
        std::vector<float> w = honest;
        edit(w);
        return of(w, 7, 5000);
    };
    // One weight of 200,000 moved by 1e-4 (an AdamW step at lr 1e-4 moves every weight that much).
    CHECK(!reference.agrees(changed([](std::vector<float>& w) { w[123'456] += 1e-4f; })));
    CHECK(!reference.agrees(changed([](std::vector<float>& w) {
        for (float& v : w)
            v *= 1.001f;
    })));
    CHECK(!reference.agrees(changed([](std::vector<float>& w) { std::fill(w.begin(), w.end(), 0.0f); })));
    CHECK(!reference.agrees(changed([](std::vector<float>& w) { w[17] = -w[17]; })));
    CHECK(!reference.agrees(changed([](std::vector<float>& w) {
        const std::vector<float> step = weights(w.size(), 3);
        for (std::size_t i = 0; i < w.size(); ++i)
            w[i] -= 1e-6f * step[i] / 0.02f; // every weight ~1e-6 back: the weights of a step ago
    })));
    CHECK(!reference.agrees(changed([](std::vector<float>& w) { w.pop_back(); })));
    // Swapping two weights keeps the norm but not the projections (unless both signs match there).
    int swapsSeen = 0;
    for (std::size_t i = 0; i < 8; ++i)
        swapsSeen +=
            !reference.agrees(changed([&](std::vector<float>& w) { std::swap(w[2 * i], w[2 * i + 1]); }));
    CHECK(swapsSeen >= 4);
}

TESSERA_TEST(anotherSeedGivesOtherProjections) {
    const std::vector<float> w = weights(50'000, 4);
    const WeightFingerprint a = of(w, 1, 1000), b = of(w, 2, 1000);
    CHECK(a.squaredNorm() == b.squaredNorm());
    for (int j = 0; j < WeightFingerprint::kProjections; ++j)
        CHECK(a.projections()[std::size_t(j)] != b.projections()[std::size_t(j)]);
    CHECK(!a.agrees(b)); // a fingerprint of another seed is not an answer
    // Each projection is a sum of ±w: about the weights' norm in size, not their sum.
    const double norm = std::sqrt(a.squaredNorm());
    for (const double p : a.projections())
        CHECK(std::abs(p) < 5 * norm);
}

TESSERA_TEST(theTextReadsBackExactly) {
    const WeightFingerprint f = of(weights(1000, 5), 99, 100);
    WeightFingerprint back;
    CHECK(WeightFingerprint::parse(f.toText(), 99, back));
    CHECK(back.count() == f.count() && back.projections() == f.projections() &&
          back.squaredNorm() == f.squaredNorm() && back.agrees(f));
    for (const char* bad : {"", "12", "1 2 3 4 5", "1 2 3 4 5 6 7", "-1 0 0 0 0 0", "1 nan 0 0 0 1",
                            "1 0 0 0 0 -1", "1 0 0 0 0 inf", "x 0 0 0 0 0", "1 0 0 0 0 1 junk"})
        CHECK_MSG(!WeightFingerprint::parse(bad, 99, back), bad);
}
