// SPDX-License-Identifier: Apache-2.0
#pragma once
// TensorStats: the few numbers the result checks read off a boundary tensor (fp32 values in
// row-major [tokens, width] order). Plain loops: no torch in core/.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace tessera::coordinator::stats {

inline bool allFinite(std::span<const float> v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

inline double norm(std::span<const float> v) {
    double s = 0;
    for (float x : v)
        s += double(x) * double(x);
    return std::sqrt(s);
}

// The largest and the mean root-mean-square over rows of `width` values (one row per token), each
// row's squared norm over `dimension` (the rows' true d, when they are coordinates of fewer values
// with the same norm: FrameDecoder's check rows; 0: width).
struct RowRms {
    double max = 0;
    double mean = 0;
};
inline RowRms rowRms(std::span<const float> v, std::size_t width, std::size_t dimension = 0) {
    const double divisor = double(dimension ? dimension : width);
    RowRms out;
    if (width == 0 || v.size() < width)
        return out;
    std::size_t rows = 0;
    for (std::size_t r = 0; r + width <= v.size(); r += width, ++rows) {
        double s = 0;
        for (std::size_t i = r; i < r + width; ++i)
            s += double(v[i]) * double(v[i]);
        const double rms = std::sqrt(s / divisor);
        out.max = std::max(out.max, rms);
        out.mean += rms;
    }
    out.mean /= double(rows);
    return out;
}

// a·b / (‖a‖ ‖b‖); 0 when either is zero.
inline double cosine(std::span<const float> a, std::span<const float> b) {
    double dot = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        dot += double(a[i]) * double(b[i]);
        aa += double(a[i]) * double(a[i]);
        bb += double(b[i]) * double(b[i]);
    }
    return aa > 0 && bb > 0 ? dot / std::sqrt(aa * bb) : 0;
}

// ‖a − b‖ / ‖b‖ (‖a‖ when b is zero). Sizes must match (the caller checked the shapes).
inline double relativeError(std::span<const float> a, std::span<const float> b) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const double d = double(a[i]) - double(b[i]);
        diff += d * d;
        ref += double(b[i]) * double(b[i]);
    }
    return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

// Two frames of the same tokens compared token by token: the largest ‖a_t − b_t‖ over
// max(‖a_t‖, ‖b_t‖, floor), where floor is 1% of the frames' mean row norm (a row near zero in
// both does not make rounding look like a disagreement). Rows of `width` values; sizes must match.
inline double worstRowError(std::span<const float> a, std::span<const float> b, std::size_t width) {
    if (width == 0 || a.size() != b.size() || a.size() < width)
        return a.size() == b.size() ? 0 : INFINITY;
    const std::size_t rows = a.size() / width;
    std::vector<double> diff(rows), scale(rows);
    double meanNorm = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        double d = 0, aa = 0, bb = 0;
        for (std::size_t i = r * width; i < (r + 1) * width; ++i) {
            const double x = double(a[i]) - double(b[i]);
            d += x * x;
            aa += double(a[i]) * double(a[i]);
            bb += double(b[i]) * double(b[i]);
        }
        diff[r] = std::sqrt(d);
        scale[r] = std::sqrt(std::max(aa, bb));
        meanNorm += scale[r] / double(rows);
    }
    double worst = 0;
    for (std::size_t r = 0; r < rows; ++r)
        worst = std::max(worst, diff[r] / std::max({scale[r], 0.01 * meanNorm, 1e-30}));
    return worst;
}

// The q-quantile (0..1) of the values, nearest rank; 0 when empty.
inline double quantile(std::vector<double> v, double q) {
    if (v.empty())
        return 0;
    const auto k = std::size_t(std::clamp(q, 0.0, 1.0) * double(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
    return v[k];
}

} // namespace tessera::coordinator::stats
