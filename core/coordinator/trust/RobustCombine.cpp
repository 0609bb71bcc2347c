// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/RobustCombine.h"

#include "coordinator/trust/TensorStats.h"

#include <algorithm>
#include <cmath>

namespace tessera::coordinator {

namespace {

// The median of v (the mean of the middle two for an even count); v is reordered.
double median(std::vector<double>& v) {
    const std::size_t n = v.size();
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(n / 2), v.end());
    const double upper = v[n / 2];
    if (n % 2 == 1)
        return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(n / 2));
    return (lower + upper) / 2;
}

} // namespace

Combined robustCombine(const std::vector<Share>& shares, std::span<const float> reference,
                       RobustCombineSettings settings) {
    Combined out;
    std::vector<const Share*> finite;
    const bool referenced = !reference.empty() && stats::allFinite(reference);
    const auto rms = [](std::span<const float> v) {
        return v.empty() ? 0.0 : stats::norm(v) / std::sqrt(double(v.size()));
    };
    const double bound =
        std::max(settings.minRmsBound, referenced ? settings.rmsRatio * rms(reference) : 0.0);
    for (const Share& s : shares) {
        bool ok = stats::allFinite(s.values) &&
                  (finite.empty() || s.values.size() == finite.front()->values.size());
        if (ok && referenced)
            ok = rms(s.values) <= bound;
        if (ok)
            finite.push_back(&s);
        else
            out.dropped << s.node;
    }
    if (finite.empty())
        return out;
    const std::size_t n = finite.size();
    const std::size_t size = finite.front()->values.size();
    std::vector<double> column(n);

    std::vector<float> center(size);
    for (std::size_t i = 0; i < size; ++i) {
        for (std::size_t k = 0; k < n; ++k)
            column[k] = finite[k]->values[i];
        center[i] = float(median(column));
    }

    std::vector<double> norms(n);
    for (std::size_t k = 0; k < n; ++k) {
        double s = 0;
        for (std::size_t i = 0; i < size; ++i) {
            const double d = double(finite[k]->values[i]) - center[i];
            s += d * d;
        }
        norms[k] = std::sqrt(s);
    }
    std::vector<double> sorted = norms;
    std::sort(sorted.begin(), sorted.end());
    const double lowerMedian = sorted[(n - 1) / 2];
    const double radius = settings.clipFactor * lowerMedian;
    std::vector<double> scale(n, 1.0);
    for (std::size_t k = 0; k < n; ++k) {
        if (norms[k] > radius) {
            scale[k] = norms[k] > 0 ? radius / norms[k] : 0.0;
            out.clipped << finite[k]->node;
        }
        if (n >= 3 && norms[k] > settings.outlierFactor * lowerMedian && norms[k] > 1e-12)
            out.outliers << finite[k]->node;
    }

    out.values.resize(size);
    if (settings.meanOfClipped) {
        double total = 0;
        for (const Share* share : finite)
            total += std::max(0.0, share->weight);
        for (std::size_t i = 0; i < size; ++i) {
            double change = 0;
            for (std::size_t k = 0; k < n; ++k)
                change +=
                    std::max(0.0, finite[k]->weight) * (double(finite[k]->values[i]) - center[i]) * scale[k];
            out.values[i] = float(center[i] + (total > 0 ? change / total : 0.0));
        }
        out.used = int(n);
        return out;
    }
    for (std::size_t i = 0; i < size; ++i) {
        for (std::size_t k = 0; k < n; ++k)
            column[k] = (double(finite[k]->values[i]) - center[i]) * scale[k];
        double change = 0;
        if (n >= 3) {
            change = median(column);
        } else {
            for (double c : column)
                change += c;
            change /= double(n);
        }
        out.values[i] = float(center[i] + change);
    }
    out.used = int(n);
    return out;
}

} // namespace tessera::coordinator
