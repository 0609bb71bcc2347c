// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageMonitor: per-stage robust statistics of the boundary tensors the swarm has accepted, and
// the judgement of a new result against them (SENTINEL-style monitoring: no compute is duplicated,
// only numbers the coordinator reads off tensors it decodes anyway).
//
// For every stage and metric a window of the last `window` values learned is kept; once it holds
// `warmup` values, a new value is an outlier when it lies further from the median of the `recent`
// values learned last than `k` robust deviations (1.4826 × the whole window's median absolute
// deviation, but never less than 0.1: honest values that happen to agree closely must not make every
// small difference an outlier). The centre follows the recent values because training moves them:
// a stage's activation RMS grows 2.5× and its gradient RMS falls 3× within the first hundred steps
// while honest results agree within a few percent, and against the whole window's median every honest
// result after such a move was an outlier, audited at once, for as long as the old values held the
// window's middle (measured: over a hundred audits in a 150-step run). Metrics (stored in
// log space where they are magnitudes):
//   Rms            log of the mean per-token RMS of a forward output
//   Change         log of ‖out − in‖ / ‖in‖ of a middle or last stage's forward output
//   GradientRms    log of the mean per-token RMS of a gradient a stage sends back
//   Cosine         cosine between the gradient a middle stage took and the one it sent back
//   Loss           the last stage's loss
// Whose values enter a window is the caller's choice (ResultCheck: vetted nodes'). The median
// holds while liars return fewer than half of the values learned; a liar that moves its answers by
// less than the threshold per window (a slow drift) is the audits' to catch (docs/ARCHITECTURE.md).

#include <QJsonObject>
#include <QString>
#include <QtGlobal>

#include <array>
#include <deque>
#include <optional>
#include <vector>

namespace tessera::coordinator {

struct StageMonitorSettings {
    int window = 256; // values kept per stage and metric
    int warmup = 32;  // values before a metric judges anything
    int recent = 32;  // the last values learned, whose median a new value is judged against
    double k = 8;     // robust deviations from the median that make an outlier (0: none judged)
};

class StageMonitor final {
public:
    enum class Metric { Rms, Change, GradientRms, Cosine, Loss };
    static constexpr int kMetrics = 5;
    struct Sample {
        Metric metric;
        double value; // as measured (the monitor takes the log where the metric is a magnitude)
    };

    StageMonitor(int stages, StageMonitorSettings settings = {});

    // Why these values of a result of `stage` are outliers, or none. With `learn`, they join the
    // stage's windows, outliers too, and those within the threshold count towards status()'s worst.
    std::optional<QString> observe(int stage, const std::vector<Sample>& samples, bool learn);
    // Whether a value is an outlier for the stage (as observe() judges, learning nothing); none while the
    // metric's window warms up or no threshold is set.
    std::optional<bool> outlier(int stage, Sample sample) const;

    // The largest deviation (in robust deviations) among values learned within the threshold, per metric:
    // how close honest results came to the threshold k (the calibration BENCHMARKS.md reports).
    QJsonObject status() const;

    static const char* name(Metric metric);

private:
    struct Window {
        std::deque<double> values;
    };
    struct Deviation {
        double median = 0;
        double deviations = 0; // robust deviations of the value from the median
    };
    // Where `value` lies against the window; none while it is warming up.
    std::optional<Deviation> deviation(const Window& w, double value) const;

    StageMonitorSettings m_settings;
    std::vector<std::array<Window, kMetrics>> m_windows; // by stage
    std::array<double, kMetrics> m_worstAccepted{};
    std::array<qint64, kMetrics> m_judged{};
};

} // namespace tessera::coordinator
