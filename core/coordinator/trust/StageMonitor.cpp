// SPDX-License-Identifier: Apache-2.0
// StageMonitor: robust per-stage statistics of accepted boundary tensors; outliers named.
#include "coordinator/trust/StageMonitor.h"

#include "coordinator/trust/TensorStats.h"

#include <algorithm>
#include <cmath>

namespace tessera::coordinator {

namespace {

constexpr double kMadToSigma = 1.4826; // a normal distribution's σ from its median absolute deviation

bool logScale(StageMonitor::Metric m) {
    return m == StageMonitor::Metric::Rms || m == StageMonitor::Metric::Change ||
           m == StageMonitor::Metric::GradientRms;
}

// The smallest robust deviation a threshold is built on: 0.1 in log space is ±10%, a cosine or a
// loss moving by 0.1 — with k = 8, nothing within 2.2× (0.8 of a cosine or a nat) of the median is
// an outlier however closely honest results agree. Calibrated on honest runs (BENCHMARKS.md, "Trust").
constexpr double kFloor = 0.1;

} // namespace

StageMonitor::StageMonitor(int stages, StageMonitorSettings settings)
    : m_settings(settings)
    , m_windows(std::size_t(std::max(stages, 1))) {}

const char* StageMonitor::name(Metric metric) {
    switch (metric) {
    case Metric::Rms:
        return "activation_rms";
    case Metric::Change:
        return "activation_change";
    case Metric::GradientRms:
        return "gradient_rms";
    case Metric::Cosine:
        return "gradient_cosine";
    case Metric::Loss:
        return "loss";
    }
    return "?";
}

std::optional<StageMonitor::Deviation> StageMonitor::deviation(const Window& w, double value) const {
    if (int(w.values.size()) < m_settings.warmup)
        return std::nullopt;
    std::vector<double> v(w.values.begin(), w.values.end());
    const double median = stats::quantile(v, 0.5);
    for (double& x : v)
        x = std::abs(x - median);
    const double spread = std::max(kMadToSigma * stats::quantile(std::move(v), 0.5), kFloor);
    const auto recent = std::ptrdiff_t(std::clamp(m_settings.recent, 1, int(w.values.size())));
    const double centre = stats::quantile(std::vector<double>(w.values.end() - recent, w.values.end()), 0.5);
    return Deviation{centre, std::abs(value - centre) / spread};
}

std::optional<QString> StageMonitor::observe(int stage, const std::vector<Sample>& samples, bool learn) {
    if (stage < 0 || std::size_t(stage) >= m_windows.size())
        return std::nullopt;
    std::optional<QString> outlier;
    for (const Sample& s : samples) {
        if (!std::isfinite(s.value) || (logScale(s.metric) && s.value <= 0))
            continue; // the hard checks judge what is not finite, and zero
        const double x = logScale(s.metric) ? std::log(s.value) : s.value;
        const auto m = std::size_t(s.metric);
        Window& w = m_windows[std::size_t(stage)][m];
        const std::optional<Deviation> d = deviation(w, x);
        if (d && d->deviations > m_settings.k && !outlier)
            outlier =
                QStringLiteral("its %1 (%2) is %3 robust deviations (the spread of the stage's last %4 "
                               "results from audited nodes) from the median of the last %5 (%6; more than "
                               "%7 is audited at once)")
                    .arg(QString::fromLatin1(name(s.metric)))
                    .arg(s.value, 0, 'g', 3)
                    .arg(d->deviations, 0, 'f', 1)
                    .arg(w.values.size())
                    .arg(std::min<qsizetype>(std::max(m_settings.recent, 1), qsizetype(w.values.size())))
                    .arg(logScale(s.metric) ? std::exp(d->median) : d->median, 0, 'g', 3)
                    .arg(m_settings.k, 0, 'g', 3);
        if (!learn)
            continue;
        if (d && d->deviations <= m_settings.k) {
            m_worstAccepted[m] = std::max(m_worstAccepted[m], d->deviations);
            ++m_judged[m];
        }
        w.values.push_back(x);
        while (int(w.values.size()) > m_settings.window)
            w.values.pop_front();
    }
    return outlier;
}

std::optional<bool> StageMonitor::outlier(int stage, Sample s) const {
    if (stage < 0 || std::size_t(stage) >= m_windows.size() || !(m_settings.k > 0) ||
        !std::isfinite(s.value) || (logScale(s.metric) && s.value <= 0))
        return std::nullopt;
    const std::optional<Deviation> d = deviation(m_windows[std::size_t(stage)][std::size_t(s.metric)],
                                                 logScale(s.metric) ? std::log(s.value) : s.value);
    if (!d)
        return std::nullopt;
    return d->deviations > m_settings.k;
}

QJsonObject StageMonitor::status() const {
    QJsonObject metrics;
    for (int m = 0; m < kMetrics; ++m)
        metrics.insert(
            QString::fromLatin1(name(Metric(m))),
            QJsonObject{{QStringLiteral("judged"), m_judged[std::size_t(m)]},
                        {QStringLiteral("worst_accepted_deviations"), m_worstAccepted[std::size_t(m)]}});
    return QJsonObject{{QStringLiteral("threshold_deviations"), m_settings.k},
                       {QStringLiteral("window"), m_settings.window},
                       {QStringLiteral("metrics"), metrics}};
}

} // namespace tessera::coordinator
