// SPDX-License-Identifier: Apache-2.0
#include "base/WeightFingerprint.h"

#include "base/SplitMix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tessera::gpu {

void WeightFingerprint::add(std::span<const float> values) {
    for (const float value : values) {
        // One mix a value: its low kProjections bits are the signs of its entries in the vectors.
        const std::uint64_t signs = splitMix64(m_seed ^ (std::uint64_t(m_count) * 0xd1342543de82ef95ull));
        const double v = value;
        for (int j = 0; j < kProjections; ++j) // ±v without a branch (the signs are random: unpredictable)
            m_projections[std::size_t(j)] += v * double(int((signs >> j) & 1u) * 2 - 1);
        m_squares += v * v;
        ++m_count;
    }
}

double WeightFingerprint::relativeDifference(const WeightFingerprint& other) const {
    const double norm = std::sqrt(std::max(m_squares, other.m_squares)) + 1e-30;
    double worst = std::abs(m_squares - other.m_squares) / (norm * norm);
    for (int j = 0; j < kProjections; ++j)
        worst = std::max(
            worst, std::abs(m_projections[std::size_t(j)] - other.m_projections[std::size_t(j)]) / norm);
    return worst;
}

bool WeightFingerprint::agrees(const WeightFingerprint& other) const {
    return m_seed == other.m_seed && m_count == other.m_count && std::isfinite(m_squares) &&
           std::isfinite(other.m_squares) && relativeDifference(other) <= 1e-9;
}

std::string WeightFingerprint::toText() const {
    std::string out = std::to_string(m_count);
    char number[40];
    for (const double v : m_projections) {
        std::snprintf(number, sizeof number, " %.17g", v);
        out += number;
    }
    std::snprintf(number, sizeof number, " %.17g", m_squares);
    return out + number;
}

bool WeightFingerprint::parse(const std::string& text, std::uint64_t seed, WeightFingerprint& out) {
    if (text.size() > 200)
        return false;
    std::istringstream in(text);
    in.imbue(std::locale::classic());
    WeightFingerprint f(seed);
    if (!(in >> f.m_count) || f.m_count < 0)
        return false;
    for (double& v : f.m_projections)
        if (!(in >> v) || !std::isfinite(v))
            return false;
    if (!(in >> f.m_squares) || !std::isfinite(f.m_squares) || f.m_squares < 0)
        return false;
    std::string rest;
    if (in >> rest)
        return false;
    out = f;
    return true;
}

} // namespace tessera::gpu
