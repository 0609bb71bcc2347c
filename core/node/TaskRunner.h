#pragma once
// TaskRunner: the node's side of the swarm data plane — the session's task, step, averaging and
// sync messages into EngineWorker tasks, and their results back into messages.
//
// The contract is docs/ARCHITECTURE.md, "Swarm data plane (issue 6)". Each message becomes at
// most one engine task; its answer is sent when that task finishes (the worker runs them in
// order, so a step follows the tasks that came before it). A malformed message is logged and
// changes nothing: a task whose id is readable is answered with an error, anything else with
// nothing. Answers: task_result and average_share are binary (ok:false with an error and no
// frame when they failed; a backward that needs its input says needs_input:true); step_done and
// sync_done are text, with ok and, when it failed, error.
//
// Averaging round r (one per message pair, any number in flight, the oldest forgotten past 8):
//   average(r, p)        → Gather p → snapshot(r) kept, average_share(r, p) sent
//   average_result(r, p) → ApplyDelta(average, snapshot(r)) → snapshot(r) forgotten
//   average_result for a round without a snapshot → ignored
//
// The node leaves the stage (a reassign): abandon() — queued tasks dropped on the worker,
// results still to come not answered, snapshots forgotten; the node then drops the runner.

#include "model/ModelConfig.h"
#include "node/EngineTask.h"

#include <QByteArray>
#include <QJsonObject>
#include <QObject>

#include <array>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

namespace tessera {
struct TaskMessage;
}

namespace tessera::node {

class EngineWorker;

class TaskRunner final : public QObject {
    Q_OBJECT

public:
    using SendBinary = std::function<void(const QByteArray&)>;
    using SendText = std::function<void(const QJsonObject&)>;

    // What `sync_request` and `sync` use when the coordinator does not say (DESIGN.md: 20).
    static constexpr int kDefaultPartitions = 20;
    // Rounds whose result never came are forgotten beyond this many.
    static constexpr int kMaxSnapshots = 8;

    // Submits to `worker` and listens to its taskFinished (results of tasks it did not submit,
    // such as probes, are not its business). `config` and `stage` describe the loaded stage.
    TaskRunner(EngineWorker* worker, gpu::ModelConfig config, int stage, SendBinary sendBinary,
               SendText sendText, QObject* parent = nullptr);
    ~TaskRunner() override;

    // A text message: true when it is the data plane's (step, average, sync_request, a task
    // that is not a probe) and was taken; false leaves it to the caller.
    bool handleText(const QJsonObject& message);
    // A binary message (task, average_result, sync). Never throws, never crashes on bad bytes.
    void handleBinary(const QByteArray& message);
    // The node leaves this stage: nothing more is submitted, answered or averaged. The worker
    // drops what is queued (probes aside); a task already running ends unanswered. The
    // coordinator stopped routing this stage here before it asked, and re-routes what it sent.
    void abandon();

    // What `tessera-node status` shows under "training".
    QJsonObject status() const;
    qint64 averagingRounds() const { return m_averagingRounds; }
    qint64 snapshotsHeld() const { return qint64(m_snapshots.size()); }

private:
    // What an engine task was for, by the engine task id this runner gave it.
    struct Pending {
        EngineTask::Kind engineKind = EngineTask::Forward;
        QString message; // "task", "step", "average", "average_result", "sync_request", "sync"
        QString kind;    // a task's kind as the coordinator named it
        qint64 taskId = 0;
        qint64 microbatch = 0;
        std::array<quint32, 2> shape{}; // B, T of the task's input frame
        qint64 round = 0;
        int partition = -1;
        int partitions = 0;
        qint64 step = 0;
    };
    struct Snapshot {
        int partition = -1;
        int partitions = 0;
        std::vector<float> values;
    };

    void submit(EngineTask task, Pending pending);
    void onTask(const TaskMessage& message);
    void onAverageResult(const TaskMessage& message);
    void onSync(const TaskMessage& message);
    void refuseTask(const QJsonObject& header, const QString& error);
    void onTaskFinished(const EngineResult& result);
    void finishTask(const Pending& p, const EngineResult& r);
    void finishGather(const Pending& p, const EngineResult& r);
    void sendPartition(qint64 round, int partition, int partitions, const std::vector<float>& values);

    EngineWorker* m_worker;
    gpu::ModelConfig m_config;
    int m_stage;
    SendBinary m_sendBinary;
    SendText m_sendText;
    std::unordered_map<qint64, Pending> m_pending;
    qint64 m_nextEngineId = 1;
    std::map<qint64, Snapshot> m_snapshots; // by round

    qint64 m_forwards = 0;
    qint64 m_forwardBackwards = 0;
    qint64 m_backwards = 0;
    qint64 m_failed = 0;
    qint64 m_refused = 0; // malformed messages
    qint64 m_step = -1;   // the coordinator's step last applied
    qint64 m_stepsDone = 0;
    double m_lastLoss;
    qint64 m_averagingRounds = 0;
    qint64 m_syncs = 0;
};

} // namespace tessera::node
