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

// Step 1: the shares kept — finite, of the first kept share's size, and (with a finite reference)
// no larger in RMS than the bound; the others are named in out.dropped.
std::vector<const Share*> keepSane(const std::vector<Share>& shares, std::span<const float> reference,
                                   const RobustCombineSettings& settings, Combined& out) {
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
    return finite;
}

// The shares' coordinate-wise median.
std::vector<float> coordinateMedian(const std::vector<const Share*>& finite) {
    const std::size_t n = finite.size();
    const std::size_t size = finite.front()->values.size();
    std::vector<double> column(n);
    std::vector<float> center(size);
    for (std::size_t i = 0; i < size; ++i) {
        for (std::size_t k = 0; k < n; ++k)
            column[k] = finite[k]->values[i];
        center[i] = float(median(column));
    }
    return center;
}

// Step 2 (and step 3's naming): each share's scale onto the clip radius (1 where within it); the
// shares shortened go to out.clipped, the far outliers (3 or more shares) to out.outliers.
std::vector<double> clipScales(const std::vector<const Share*>& finite, const std::vector<float>& center,
                               const RobustCombineSettings& settings, Combined& out) {
    const std::size_t n = finite.size();
    const std::size_t size = center.size();
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
    return scale;
}

// Step 3': the clipped shares' mean, weighted by each share's weight.
void weightedMeanOfClipped(const std::vector<const Share*>& finite, const std::vector<float>& center,
                           const std::vector<double>& scale, std::vector<float>& values) {
    const std::size_t n = finite.size();
    double total = 0;
    for (const Share* share : finite)
        total += std::max(0.0, share->weight);
    for (std::size_t i = 0; i < values.size(); ++i) {
        double change = 0;
        for (std::size_t k = 0; k < n; ++k)
            change +=
                std::max(0.0, finite[k]->weight) * (double(finite[k]->values[i]) - center[i]) * scale[k];
        values[i] = float(center[i] + (total > 0 ? change / total : 0.0));
    }
}

// Step 3: the clipped shares' coordinate-wise median (3 or more shares), else their mean.
void medianOfClipped(const std::vector<const Share*>& finite, const std::vector<float>& center,
                     const std::vector<double>& scale, std::vector<float>& values) {
    const std::size_t n = finite.size();
    std::vector<double> column(n);
    for (std::size_t i = 0; i < values.size(); ++i) {
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
        values[i] = float(center[i] + change);
    }
}

} // namespace

Combined robustCombine(const std::vector<Share>& shares, std::span<const float> reference,
                       RobustCombineSettings settings) {
    Combined out;
    const std::vector<const Share*> finite = keepSane(shares, reference, settings, out);
    if (finite.empty())
        return out;
    const std::vector<float> center = coordinateMedian(finite);
    const std::vector<double> scale = clipScales(finite, center, settings, out);
    out.values.resize(center.size());
    if (settings.meanOfClipped)
        weightedMeanOfClipped(finite, center, scale, out.values);
    else
        medianOfClipped(finite, center, scale, out.values);
    out.used = int(finite.size());
    return out;
}

} // namespace tessera::coordinator
