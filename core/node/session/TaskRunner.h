// SPDX-License-Identifier: Apache-2.0
#pragma once
// TaskRunner: the node's side of the swarm data plane — the session's task, step, averaging, sync
// and gradient exchange messages (typed and decoded by NodeInbox) into EngineWorker tasks, and their
// results back into messages.
//
// The contract is docs/ARCHITECTURE.md, "Session messages". Each message becomes at most one engine
// task; its answer is sent when that task finishes (the worker runs them in order, so a step follows
// the tasks that came before it). A malformed message is logged and changes nothing: a task whose id
// is readable is answered with an error, anything else with nothing. Answers: task_result and
// average_share are binary (ok:false with an error, its kind and no frame when they failed; a
// backward that needs its input says error_kind "missing_graph"); step_done and sync_done are text.
//
// The gradient exchange (coordinator/training/GradientAverager): a step request with a basis asks
// for a share, a low rank's second share is built on the basis the coordinator answers with, and
// the result is what every replica applies.
//
// One copy per hop: a task's frames reach the engine as views into the message they came in, and a
// result's frame is sent from where the engine wrote it (the envelope is written in front of it).
//
// Averaging round r (one per message pair, any number in flight, the oldest forgotten past 8):
//   average(r, p)        → Gather p → snapshot(r) kept, average_share(r, p) sent
//   average_result(r, p) → ApplyDelta(average, snapshot(r)) → snapshot(r) forgotten
//   average_result for a round without a snapshot → ignored
//
// The node leaves the stage (a reassign): abandon() — queued tasks dropped on the worker,
// results still to come not answered, snapshots forgotten; the node then drops the runner.

#include "base/ModelConfig.h"
#include "node/engine/EngineTask.h"
#include "node/session/SessionSender.h"
#include "node/session/SyncProgress.h"
#include "protocol/PartitionChunks.h"
#include "protocol/SessionMessages.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>

#include <map>
#include <unordered_map>
#include <vector>

namespace tessera::protocol {
struct TaskMessage;
}

namespace tessera::node {

class EngineWorker;

class TaskRunner final : public QObject {
    Q_OBJECT

public:
    // Rounds whose result never came are forgotten beyond this many.
    static constexpr int kMaxSnapshots = 8;

    // Submits to `worker` and listens to its taskFinished (results of tasks it did not submit,
    // such as probes, are not its business). `config` and `stage` describe the loaded stage; the
    // answers go to `session`, which must outlive the runner.
    TaskRunner(EngineWorker* worker, gpu::ModelConfig config, int stage, SessionSender& session,
               QObject* parent = nullptr);
    ~TaskRunner() override;

    // The data plane's text messages.
    void receive(const protocol::Step& step);
    void receive(const protocol::Average& average);
    void receive(const protocol::SyncRequest& request);
    // The data plane's binary messages, with the message their frames are in. A task's frames reach
    // the engine as views into `message`; a result or basis in chunks is taken once whole.
    void receive(const protocol::Task& task, const protocol::TaskMessage& message);
    void receive(const protocol::AverageResult& result, const protocol::TaskMessage& message);
    void receive(const protocol::Sync& sync, const protocol::TaskMessage& message);
    void receive(const protocol::GradientResult& result, const protocol::TaskMessage& message);
    void receive(const protocol::GradientBasis& basis, const protocol::TaskMessage& message);
    // A task this runner will not run (malformed, or text where frames are needed): answered at once
    // with ok:false, error_kind "invalid_input", so the coordinator retries it at once.
    void refuseTask(qint64 taskId, protocol::TaskKind kind, qint64 microbatch, const QString& error);
    // A message that did not read, not even a task id: counted under "refused", answered with nothing.
    void refuseUnreadable() { ++m_refused; }
    // The node leaves this stage: nothing more is submitted, answered or averaged. The worker
    // drops what is queued (probes aside); a task already running ends unanswered. The
    // coordinator stopped routing this stage here before it asked, and re-routes what it sent.
    void abandon();

    // What `tessera-node status` shows under "training".
    QJsonObject status() const;
    qint64 averagingRounds() const { return m_averagingRounds; }
    qint64 snapshotsHeld() const { return qint64(m_snapshots.size()); }
    // The ghost sync these weights hold a part of (Ready says so, to resume it): round 0 when none.
    const SyncProgress& syncProgress() const { return m_sync; }

private:
    // What an engine task was for, by the engine task id this runner gave it.
    struct Pending {
        EngineTask::Kind engineKind = EngineTask::Forward;
        protocol::MessageType message = protocol::MessageType::Task; // what it answers
        protocol::TaskKind kind = protocol::TaskKind::Forward;       // a task's
        qint64 taskId = 0;
        qint64 microbatch = 0;
        qint64 round = 0;
        int partition = -1;
        int partitions = 0;
        qint64 step = 0;
        int bits = 32;                         // a gradient share's: what its values travel in
        qint64 offset = 0, end = 0, total = 0; // a sync chunk's weights [offset, end) of total
        qint64 chunk = 0;                      // a gathered share's values a message (PartitionChunks)
    };
    struct Snapshot {
        int partition = -1;
        int partitions = 0;
        std::vector<float> values;
    };

    void submit(EngineTask task, Pending pending);
    // A result or basis may come in chunks (protocol/PartitionChunks): `handle` reads it once whole.
    template <class M>
    void onceWhole(protocol::PartitionAssembly& chunks, const M& header, qint64 round, int part,
                   const protocol::TaskMessage& message,
                   void (TaskRunner::*handle)(const M&, const protocol::TaskMessage&));
    // The whole messages.
    void onAverageResult(const protocol::AverageResult& header, const protocol::TaskMessage& message);
    void onGradientResult(const protocol::GradientResult& header, const protocol::TaskMessage& message);
    void onGradientBasis(const protocol::GradientBasis& header, const protocol::TaskMessage& message);
    void finishShare(const Pending& p, const EngineResult& r);
    void startGather(qint64 round, int partition, int partitions, protocol::MessageType message,
                     qint64 chunk);
    void onTaskFinished(const EngineResult& result);
    void finishTask(const Pending& p, const EngineResult& r);
    void finishGather(const Pending& p, const EngineResult& r);
    void sendShare(const protocol::AverageShare& share, const std::vector<float>& values, qint64 chunk);

    EngineWorker* m_worker;
    gpu::ModelConfig m_config;
    int m_stage;
    SessionSender& m_session;
    std::unordered_map<qint64, Pending> m_pending;
    qint64 m_nextEngineId = 1;
    std::map<qint64, Snapshot> m_snapshots;       // by round
    protocol::PartitionAssembly m_resultChunks;   // an average_result arriving in chunks
    protocol::PartitionAssembly m_gradientChunks; // a gradient_result or gradient_basis arriving in chunks
    qint64 m_gradientChunk = 0; // the last step's: words a message of a gradient share carries

    qint64 m_forwards = 0;
    qint64 m_forwardBackwards = 0;
    qint64 m_backwards = 0;
    qint64 m_failed = 0;
    qint64 m_refused = 0; // malformed messages
    qint64 m_step = -1;   // the coordinator's step last applied
    qint64 m_stepsDone = 0;
    int m_gradientRank = 0; // the exchange's, from the last step request
    struct FirstShare {
        qint64 step = -1;
        int microbatches = 0;
    } m_firstShare; // a low rank's last first share: its second weighs the same
    double m_lastLoss;
    QElapsedTimer m_sinceTask; // since the last data-plane task done; invalid before the first
    qint64 m_averagingRounds = 0;
    qint64 m_syncs = 0;
    SyncProgress m_sync;
};

} // namespace tessera::node
