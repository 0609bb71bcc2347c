// SPDX-License-Identifier: Apache-2.0
#pragma once
// EngineWorker: the node's engine thread — runs one stage's forward/backward/step tasks through
// gpu::StageEngine, one at a time, throttled to a compute share and softly pausable.
//
// Lives on its own QThread (see EngineThread). Every public method may be called from any
// thread: it posts the request to the worker's thread, so a caller never blocks on compute. Its
// signals are emitted on the thread of the `replies` mailbox it was given (the owner's), never on
// the worker's: requests and answers cross threads only through Mailboxes (common/Mailbox.h).
//
// States (between tasks; a running task always finishes):
//   UNLOADED  --load ok-->  READY
//   READY     --task queued, not paused, rest over-->  COMPUTING  --done-->  READY
//   READY     --task queued, rest pending-->  RESTING  --timer-->  COMPUTING
//   any       --setPaused(true)-->  PAUSED (pausedChanged(true) once no compute runs)
//   PAUSED    --setPaused(false)-->  READY (pausedChanged(false); no rejoin, queue intact)
//   any       --stop-->  STOPPED (queue discarded, engine released; stopped())
//   any       --discardQueuedWork-->  same state, queued data-plane tasks gone (probes kept)
//
// Pause is an atomic read right before each task starts, so a pause requested while a
// microbatch runs takes effect the moment it ends, even before the thread's event loop sees the
// request. A Step is a task like the others: while paused it waits with the queue.

#include "common/Mailbox.h"
#include "node/engine/ComputeThrottle.h"
#include "node/engine/EngineQueue.h"
#include "node/engine/EngineTask.h"

#include <QObject>
#include <QTimer>

#include <atomic>
#include <memory>
#include <optional>
#include <unordered_set>

namespace tessera::gpu {
class Misbehaviour;
class StageEngine;
} // namespace tessera::gpu

namespace tessera::node {

class EngineWorker final : public QObject {
    Q_OBJECT

public:
    // replies: where the signals are emitted; it must outlive the worker.
    explicit EngineWorker(Mailbox* replies, QObject* parent = nullptr);
    ~EngineWorker() override;

    // Builds the stage (seeded weights), then loads the shard when one is named; replaces any
    // stage loaded before. Answers with loaded().
    void load(const EngineLoadOptions& options);
    // Queued in order; each answers with exactly one taskFinished() (unless stop() or
    // discardQueuedWork() comes first). Refused at once (an error result) when no stage is
    // loaded or the worker is stopped.
    void submit(const EngineTask& task);
    // Drops every queued task that is not a probe, unanswered: the node left the stage they were
    // for (the coordinator re-routes them). A task already running finishes and is answered.
    void discardQueuedWork();
    void setPaused(bool paused);
    // The share of wall time to spend computing, in (0, 1]; applies from the next task on.
    void setLimit(double limit);
    // Discards the queue, releases the engine, then emits stopped(). Later tasks are refused.
    void stop();

    // Thread-safe: what was last requested (not necessarily in effect yet: see pausedChanged).
    bool pauseRequested() const { return m_pauseRequested.load(); }

Q_SIGNALS:
    void loaded(const QString& error, qint64 parameters); // error empty on success
    void taskFinished(const tessera::node::EngineResult& result);
    // true once compute has stopped (a running microbatch finished); false when it may restart.
    void pausedChanged(bool paused);
    void statsChanged(const tessera::node::EngineStats& stats);
    void stopped();

private:
    void doLoad(const EngineLoadOptions& options);
    void doSubmit(const EngineTask& task);
    void refuse(const EngineTask& task, const QString& reason); // answers without computing
    void applyPause();
    void doSetLimit(double limit);
    void doDiscardQueuedWork();
    void doStop();

    // Starts the next task now, arms the rest timer, or does nothing (paused, empty, stopped).
    void schedule();
    void runNext();
    // Runs one task: the result's ids, then its kind's handler below (any exception caught).
    EngineResult execute(const EngineTask& task);
    // One handler per EngineTask::Kind: each fills r and returns whether the task succeeded (else
    // r.error and r.errorKind say why). They run with a stage loaded.
    bool runForward(const EngineTask& task, EngineResult& r);
    bool runBackward(const EngineTask& task, EngineResult& r);
    bool runGradientSketch(const EngineTask& task, EngineResult& r);
    bool runTraceForward(const EngineTask& task, EngineResult& r);
    bool runTraceBackward(const EngineTask& task, EngineResult& r);
    bool runStep(const EngineTask& task, EngineResult& r);
    bool runForwardBackward(const EngineTask& task, EngineResult& r);
    bool runGather(const EngineTask& task, EngineResult& r);
    bool runApplyDelta(const EngineTask& task, EngineResult& r);
    bool runShareGradients(const EngineTask& task, EngineResult& r);
    bool runShareOnBasis(const EngineTask& task, EngineResult& r);
    bool runApplyGradients(const EngineTask& task, EngineResult& r);
    bool runSetWeights(const EngineTask& task, EngineResult& r);
    bool runSetWeightsRange(const EngineTask& task, EngineResult& r);
    bool runProbe(const EngineTask& task, EngineResult& r);
    void misbehave(const EngineTask& task, EngineResult& result) const;
    // A backward a lazy or inflating liar answers its own way (tests only): whether it succeeded, or
    // none when it runs as usual.
    std::optional<bool> lieInBackward(const EngineTask& task, EngineResult& r);
    void emitStats();
    // Emits on the replies' thread: `emit` is a functor that emits one signal.
    template <class F>
    void reply(F&& emit) {
        m_replies->post(std::forward<F>(emit));
    }

    Mailbox* m_replies;
    Mailbox m_inbox; // requests, run on this thread (a child: it moves with the worker)
    std::unique_ptr<gpu::StageEngine> m_engine;
    // TESSERA_TEST_MISBEHAVE: a lying node for the coordinator's tests (gpu/engine/Misbehaviour.h).
    std::unique_ptr<gpu::Misbehaviour> m_misbehaviour;
    // Tests only (TESSERA_TEST_MISBEHAVE_FROM_FILE): the lie held back, honest work done, until that file
    // exists — a liar that waits until its stage has the replicas a test needs.
    std::unique_ptr<gpu::Misbehaviour> m_laterLie;
    QString m_lieFromFile;
    std::int64_t m_skippedBackwards = 0;          // a lazy liar's, since its last share
    std::unordered_set<std::int64_t> m_claimedGraphs; // an inflating liar's claims not yet resent
    EngineQueue m_queue;
    ComputeThrottle m_throttle;
    QTimer m_restTimer;
    // Stats are sent after each task and, while idle, every second: an idle node's compute share
    // must be seen falling, not stuck at its last task's value.
    QTimer m_statsTimer;
    std::atomic<bool> m_pauseRequested{false};
    std::atomic<bool> m_stopRequested{false};
    bool m_pausedReported = false; // what pausedChanged last said
    bool m_runQueued = false;      // a runNext() is posted and not yet run
    qint64 m_tasksDone = 0;
    double m_lastTaskSeconds = 0;
    std::size_t m_headroom = 0; // the loaded engine's StageEngineOptions::outputHeadroom
};

} // namespace tessera::node
