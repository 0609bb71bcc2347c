// SPDX-License-Identifier: Apache-2.0
#pragma once
// StepWindow: which training step a new microbatch counts toward, and when a step is complete.
//
// Every microbatch belongs to one step from its issue. With k the last step that ended, steps
// k+1 … k+depth may be under way: depth 1 is synchronous (a step's microbatches all start after the
// previous step's update), depth 2 the asynchronous pipeline (step k+1 fills while step k's last
// microbatches finish and its update is exchanged). Step s may start only once step s−depth's update
// was sent to every node, so a gradient is at most depth−1 updates stale. A step ends when its own
// microbatches are complete; an abandoned one is replaced in its step.
//
// Pure bookkeeping, no I/O: TrainingLoop drives it.

#include <QtGlobal>

#include <map>
#include <optional>

namespace tessera::coordinator {

class StepWindow final {
public:
    // ended: the last step that ended (a restart resumes there; its update counts as sent).
    // maxSteps: no microbatch of a later step (0: no limit).
    StepWindow(int microbatchesPerStep, int depth, qint64 ended, qint64 maxSteps = 0);

    // The step the next microbatch would go to; none while every step under way is fully issued or
    // the next one waits for an update.
    std::optional<qint64> next() const;
    void issued(qint64 step);
    void abandoned(qint64 step);
    // A microbatch of `step` completed; returns the step it counts toward (one that already ended —
    // a restart — counts toward the next to end).
    qint64 completed(qint64 step);
    // The next step to end has all its microbatches.
    bool complete() const;
    // Ends it and returns its number.
    qint64 end();
    // Step `step`'s update was sent to every node.
    void updated(qint64 step);

    qint64 ended() const { return m_ended; }
    qint64 lastUpdated() const { return m_updated; }
    int depth() const { return m_depth; }
    // Microbatches issued and not abandoned, and completed, toward `step`.
    int alive(qint64 step) const;
    int completedOf(qint64 step) const;

private:
    struct Progress {
        int alive = 0;
        int completed = 0;
    };
    int m_perStep;
    int m_depth;
    qint64 m_ended;
    qint64 m_updated;
    qint64 m_maxSteps;
    std::map<qint64, Progress> m_steps;
};

} // namespace tessera::coordinator
