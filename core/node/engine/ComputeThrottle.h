// SPDX-License-Identifier: Apache-2.0
#pragma once
// ComputeThrottle: keeps the share of wall time spent computing at a limit, as a rest between
// tasks, and measures the share actually spent. Pure: every time is passed in.
//
// Rule: after a task that computed c and ended at e, the next starts no earlier than
// e + c·(1−L)/L, so each task and the rest after it are a duty cycle of exactly L. Only the last
// task counts: time spent idle (no work, paused) waits off the rest, but never builds up credit
// for a later burst. The limit is read when the rest is asked for, so a change applies from the
// next task on.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>

namespace tessera::node {

class ComputeThrottle final {
public:
    using Clock = std::chrono::steady_clock;
    using TimePoint = Clock::time_point;

    static constexpr std::chrono::seconds kDefaultWindow{30};

    explicit ComputeThrottle(double limit = 1.0, std::chrono::nanoseconds window = kDefaultWindow);

    // Clamped into [kMinLimit, 1]; NaN counts as 1 (no throttle).
    void setLimit(double limit);
    double limit() const { return m_limit; }
    static constexpr double kMinLimit = 0.01;

    // How long a task that would start at `now` must still wait; zero when it may start.
    std::chrono::nanoseconds restBefore(TimePoint now) const;
    // A task computed from start to end (end ≥ start; tasks do not overlap).
    void recordCompute(TimePoint start, TimePoint end);

    // Share of [now − window, now] spent computing (of less, when the first task began later).
    double computeShare(TimePoint now) const;
    // Share of the time since the first task began; 0 before any.
    double totalComputeShare(TimePoint now) const;
    std::chrono::nanoseconds totalCompute() const { return m_total; }

private:
    struct Interval {
        TimePoint start;
        TimePoint end;
    };
    void prune(TimePoint now);

    double m_limit = 1.0;
    std::chrono::nanoseconds m_window;
    std::optional<Interval> m_last;
    std::optional<TimePoint> m_firstStart;
    std::chrono::nanoseconds m_total{0};
    std::deque<Interval> m_recent; // what overlaps the window as of the last record
};

} // namespace tessera::node
