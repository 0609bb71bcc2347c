// SPDX-License-Identifier: Apache-2.0
// TaskRunner: data-plane messages in, engine tasks out, and the results back as messages.
#include "node/session/TaskRunner.h"

#include "base/BlockQuant.h"
#include "node/engine/EngineWorker.h"
#include "protocol/TaskMessage.h"

#include <cmath>
#include <limits>
#include <utility>

namespace tessera::node {

using namespace tessera::protocol;

namespace {

// A frame's payload as a view into the message's buffer (which the task keeps alive).
QByteArray viewOf(const TaskFrame* frame) {
    return frame ? QByteArray::fromRawData(frame->payload.data(), frame->payload.size()) : QByteArray();
}

QByteArray encode(const SessionMessage& header) {
    return TaskMessageBuilder(toJson(header)).take();
}

EngineTask::Kind engineKindOf(TaskKind kind) {
    switch (kind) {
    case TaskKind::Forward:
        return EngineTask::Forward;
    case TaskKind::ForwardBackward:
        return EngineTask::ForwardBackward;
    case TaskKind::Backward:
        return EngineTask::Backward;
    case TaskKind::Probe:
        break;
    }
    return EngineTask::Probe;
}

} // namespace

TaskRunner::TaskRunner(EngineWorker* worker, gpu::ModelConfig config, int stage, SessionSender& session,
                       QObject* parent)
    : QObject(parent)
    , m_worker(worker)
    , m_config(std::move(config))
    , m_stage(stage)
    , m_session(session)
    , m_resultChunks(m_config.stageParameterCount(stage))
    , m_gradientChunks(m_config.stageParameterCount(stage))
    , m_lastLoss(std::numeric_limits<double>::quiet_NaN()) {
    // The worker emits on its owner's thread (this one), from the event loop, in the order it ran
    // the tasks.
    connect(m_worker, &EngineWorker::taskFinished, this, &TaskRunner::onTaskFinished);
}

TaskRunner::~TaskRunner() = default;

// --- messages in -------------------------------------------------------------------------------

void TaskRunner::receive(const Step& step) {
    EngineTask task;
    // With a basis: gradient averaging (the share now, the step when the result comes).
    task.kind = step.basis >= 0 ? EngineTask::ShareGradients : EngineTask::Step;
    task.microbatches = EngineTask::kAllAccumulated;
    task.round = step.basis;
    task.rank = step.rank;
    task.bits = step.bits;
    task.step = step.step;
    if (step.basis >= 0)
        m_gradientRank = step.rank;
    Pending p;
    p.message = MessageType::Step;
    p.step = step.step;
    p.round = step.basis;
    p.bits = step.bits;
    p.chunk = m_gradientChunk = step.chunk;
    submit(std::move(task), p);
}

void TaskRunner::receive(const Average& average) {
    startGather(average.round, average.partition, average.partitions, MessageType::Average, average.chunk);
}

void TaskRunner::receive(const SyncRequest& request) {
    startGather(request.round, -1, request.partitions, MessageType::SyncRequest, request.chunk);
}

void TaskRunner::startGather(qint64 round, int partition, int partitions, MessageType message, qint64 chunk) {
    EngineTask task;
    task.kind = EngineTask::Gather;
    // SPARTA averages the optimizer's weights; an audit recomputes with those microbatches ran on.
    task.optimizerWeights = message == MessageType::Average;
    task.partition = partition;
    task.partitions = partitions;
    Pending p;
    p.message = message;
    p.round = round;
    p.partition = partition;
    p.partitions = partitions;
    p.chunk = chunk;
    submit(std::move(task), p);
}

template <class M>
void TaskRunner::onceWhole(PartitionAssembly& chunks, const M& header, qint64 round, int part,
                           const TaskMessage& message,
                           void (TaskRunner::*handle)(const M&, const TaskMessage&)) {
    if (header.total <= 0)
        return (this->*handle)(header, message);
    Result<std::optional<TaskMessage>> whole = chunks.add(message, round, part, header.offset, header.total);
    if (!whole) {
        ++m_refused;
        qWarning("node: %s of round %lld: %s", qPrintable(messageTypeName(typeOf(header))), qlonglong(round),
                 whole.message().c_str());
    } else if (*whole) {
        M all = header;
        all.offset = all.total = 0;
        (this->*handle)(all, **whole);
    }
}

void TaskRunner::receive(const AverageResult& result, const TaskMessage& message) {
    onceWhole(m_resultChunks, result, result.round, result.partition, message, &TaskRunner::onAverageResult);
}

void TaskRunner::receive(const GradientResult& result, const TaskMessage& message) {
    onceWhole(m_gradientChunks, result, result.step, 0, message, &TaskRunner::onGradientResult);
}

void TaskRunner::receive(const GradientBasis& basis, const TaskMessage& message) {
    onceWhole(m_gradientChunks, basis, basis.step, 1, message, &TaskRunner::onGradientBasis);
}

void TaskRunner::abandon() {
    disconnect(m_worker, nullptr, this, nullptr);
    m_worker->discardQueuedWork();
    if (!m_pending.empty() || !m_snapshots.empty())
        qInfo("node: leaving stage %d: %lld tasks unanswered, %lld averaging snapshots forgotten", m_stage,
              qlonglong(m_pending.size()), qlonglong(m_snapshots.size()));
    m_pending.clear();
    m_snapshots.clear();
}

void TaskRunner::receive(const Task& header, const TaskMessage& message) {
    const TaskFrame* input = message.frame(TaskFrameType::ForwardInput);
    const TaskFrame* targets = message.frame(TaskFrameType::Targets);
    const TaskFrame* gradient = message.frame(TaskFrameType::BackwardInput);
    const auto refuse = [&](const QString& why) {
        refuseTask(header.taskId, header.kind, header.microbatch, why);
    };
    switch (header.kind) {
    case TaskKind::Forward:
        if (!input)
            return refuse(QStringLiteral("a forward task needs a ForwardInput frame"));
        break;
    case TaskKind::ForwardBackward:
        if (!input || !targets)
            return refuse(QStringLiteral("a forward_backward task needs ForwardInput and Targets frames"));
        break;
    case TaskKind::Backward:
        break;
    case TaskKind::Probe:
        return refuse(QStringLiteral("a probe comes as a text message"));
    }
    // A share check's: this microbatch's weight gradient, sketched, on a replica whose own share is in.
    const bool sketch = header.sketchSeed != 0;
    if (sketch && (!input || (header.kind == TaskKind::Backward ? !gradient : header.kind != TaskKind::ForwardBackward)))
        return refuse(QStringLiteral("a gradient sketch needs a backward with its input, or a forward_backward"));
    if (header.trace && header.kind == TaskKind::Backward && (!input || !gradient))
        return refuse(QStringLiteral("a backward's trace needs its input and its gradient"));
    Pending p;
    p.message = MessageType::Task;
    p.kind = header.kind;
    p.taskId = header.taskId;
    p.microbatch = header.microbatch;
    EngineTask task;
    task.kind = header.trace ? (header.kind == TaskKind::Forward ? EngineTask::TraceForward
                                                                 : EngineTask::TraceBackward)
                : sketch     ? EngineTask::GradientSketch
                             : engineKindOf(header.kind);
    task.seed = std::uint64_t(header.sketchSeed);
    task.microbatch = header.microbatch;
    task.step = header.step;
    task.message = message.bytes; // keeps the views below valid: the payloads are not copied
    task.input = viewOf(input);
    task.targets = viewOf(targets);
    task.gradOutput = viewOf(gradient);
    submit(std::move(task), p);
}

void TaskRunner::onAverageResult(const AverageResult& header, const TaskMessage& message) {
    const auto it = m_snapshots.find(header.round);
    if (it == m_snapshots.end()) {
        qInfo("node: ignoring the average of round %lld: no snapshot of it is kept", qlonglong(header.round));
        return;
    }
    Snapshot snapshot = std::move(it->second);
    m_snapshots.erase(it);
    Result<std::vector<float>> average = partitionValues(message);
    if (!average || header.partition != snapshot.partition || average->size() != snapshot.values.size()) {
        ++m_refused;
        qWarning(
            "node: refusing the average of round %lld (partition %d, %lld values; sent partition %d, %lld "
            "values): %s",
            qlonglong(header.round), header.partition, average ? qlonglong(average->size()) : -1LL,
            snapshot.partition, qlonglong(snapshot.values.size()),
            average ? "it does not match the share" : average.message().c_str());
        return;
    }
    EngineTask task;
    task.kind = EngineTask::ApplyDelta;
    task.partition = snapshot.partition;
    task.partitions = snapshot.partitions;
    task.values = std::move(average).value();
    task.snapshot = std::move(snapshot.values);
    Pending p;
    p.message = MessageType::AverageResult;
    p.round = header.round;
    p.partition = task.partition;
    p.partitions = task.partitions;
    submit(std::move(task), p);
}

void TaskRunner::receive(const Sync& header, const TaskMessage& message) {
    Result<std::vector<float>> values = partitionValues(message);
    const QString refused =
        !values ? QString::fromStdString(values.message())
                : m_sync.refusal(header.round, header.offset, qint64(values->size()), header.total);
    if (!refused.isEmpty()) {
        ++m_refused;
        qWarning("node: refusing a chunk of the sync of round %lld: %s", qlonglong(header.round),
                 qPrintable(refused));
        return m_session.send(
            SyncDone{header.round, false, refused.left(kMaxReasonChars), m_sync.receivedOf(header.round)});
    }
    Pending p;
    p.message = MessageType::Sync;
    p.round = header.round;
    p.offset = header.offset;
    p.end = header.offset + qint64(values->size());
    p.total = header.total;
    m_sync.queued(p.round, p.end);
    EngineTask task;
    task.kind = EngineTask::SetWeightsRange;
    task.offset = header.offset;
    task.total = header.total;
    task.optimizerSteps = header.optimizerSteps;
    task.values = std::move(values).value();
    submit(std::move(task), p);
}

// The gradient exchange (coordinator/training/GradientAverager): the result every replica applies,
// and a low rank's second share on the basis the coordinator answered.

void TaskRunner::onGradientResult(const GradientResult& header, const TaskMessage& message) {
    const TaskFrame* frame = message.frame(TaskFrameType::Partition);
    Result<std::vector<float>> values = !frame ? Result<std::vector<float>>(makeError("no Partition frame"))
                                        : header.bits == 32
                                            ? partitionValues(*frame)
                                            : gradientValues(*frame, header.bits, header.values);
    if (!values) {
        ++m_refused;
        qWarning("node: refusing the gradient result of step %lld: %s", qlonglong(header.step),
                 values.message().c_str());
        m_session.send(StepDone{
            header.step, false, 0, QString::fromStdString(values.message()).left(kMaxReasonChars), {}});
        return;
    }
    EngineTask task;
    task.kind = EngineTask::ApplyGradients;
    task.rank = m_gradientRank;
    task.values = std::move(values).value();
    task.round = header.round;
    task.included = header.included;
    task.learningRate = header.learningRate;
    task.clipScale = header.clipScale;
    task.lookAhead = header.lookAhead;
    task.fingerprintSeed = std::uint64_t(header.fingerprintSeed);
    Pending p;
    p.message = MessageType::GradientResult;
    p.step = header.step;
    p.round = header.round;
    submit(std::move(task), p);
}

void TaskRunner::onGradientBasis(const GradientBasis& header, const TaskMessage& message) {
    Result<std::vector<float>> values = partitionValues(message);
    if (!values || m_firstShare.step != header.step) {
        ++m_refused;
        const QString reason =
            values
                ? QStringLiteral("no first share of step %1 was sent").arg(header.step)
                : QStringLiteral("its basis does not read: %1").arg(QString::fromStdString(values.message()));
        qWarning("node: refusing the gradient basis of step %lld: %s", qlonglong(header.step),
                 qPrintable(reason));
        GradientShare refused{header.step, 0, header.round, false, reason.left(kMaxReasonChars), 32, false,
                              0,           0};
        return m_session.sendBinary(TaskMessageBuilder(toJson(refused)).take());
    }
    EngineTask task;
    task.kind = EngineTask::ShareOnBasis;
    task.rank = m_gradientRank;
    task.round = header.round;
    task.step = header.step;
    task.values = std::move(values).value();
    Pending p;
    p.message = MessageType::GradientBasis;
    p.step = header.step;
    p.round = header.round;
    p.chunk = m_gradientChunk;
    submit(std::move(task), p);
}

void TaskRunner::refuseTask(qint64 taskId, TaskKind kind, qint64 microbatch, const QString& error) {
    ++m_refused;
    ++m_failed;
    qWarning("node: refusing task %lld: %s", qlonglong(taskId), qPrintable(error));
    TaskResult answer;
    answer.taskId = taskId;
    answer.kind = kind;
    answer.microbatch = microbatch;
    answer.ok = false;
    answer.error = error.left(kMaxReasonChars);
    answer.errorKind = ErrorKind::InvalidInput;
    m_session.sendBinary(encode(answer));
}

void TaskRunner::submit(EngineTask task, Pending pending) {
    task.taskId = m_nextEngineId++;
    pending.engineKind = task.kind;
    m_pending.emplace(task.taskId, std::move(pending));
    m_worker->submit(task);
}

// --- results out -------------------------------------------------------------------------------

void TaskRunner::onTaskFinished(const EngineResult& result) {
    const auto it = m_pending.find(result.taskId);
    // Probes carry the coordinator's ids: a kind that differs is not this runner's task.
    if (it == m_pending.end() || it->second.engineKind != result.kind)
        return;
    const Pending p = std::move(it->second);
    m_pending.erase(it);

    switch (p.message) {
    case MessageType::Task:
        if (result.ok)
            m_sinceTask.start();
        return finishTask(p, result);
    case MessageType::Average:
    case MessageType::SyncRequest:
        return finishGather(p, result);
    case MessageType::GradientBasis:
        return finishShare(p, result);
    case MessageType::Step:
        if (result.kind == EngineTask::ShareGradients)
            return finishShare(p, result);
        if (result.ok) {
            m_step = p.step;
            ++m_stepsDone;
        } else {
            qWarning("node: step %lld: %s", qlonglong(p.step), qPrintable(result.error));
        }
        return m_session.send(StepDone{
            p.step, result.ok, result.ok ? result.microbatches : 0, result.error.left(kMaxReasonChars), {}});
    case MessageType::GradientResult:
        if (result.ok) {
            m_step = p.step;
            ++m_stepsDone;
        } else {
            qWarning("node: step %lld (averaged gradients): %s", qlonglong(p.step), qPrintable(result.error));
        }
        return m_session.send(
            StepDone{p.step, result.ok, 0, result.error.left(kMaxReasonChars), result.fingerprint});
    case MessageType::AverageResult:
        if (result.ok)
            ++m_averagingRounds;
        else
            qWarning("node: averaging round %lld: %s", qlonglong(p.round), qPrintable(result.error));
        return;
    case MessageType::Sync: {
        const bool complete = m_sync.applied(p.round, p.offset, p.end, p.total, result.ok);
        if (complete) {
            ++m_syncs;
            qInfo("node: weights synced (round %lld, %lld weights)", qlonglong(p.round), qlonglong(p.total));
        } else if (!result.ok) {
            qWarning("node: sync of round %lld: %s", qlonglong(p.round), qPrintable(result.error));
        }
        return m_session.send(SyncDone{p.round, result.ok, result.error.left(kMaxReasonChars),
                                       complete ? p.total : m_sync.receivedOf(p.round)});
    }
    default:
        return;
    }
}

void TaskRunner::finishTask(const Pending& p, const EngineResult& r) {
    TaskResult answer;
    answer.taskId = p.taskId;
    answer.kind = p.kind;
    answer.microbatch = p.microbatch;
    answer.ok = r.ok;
    answer.computeSeconds = r.computeSeconds;
    if (!r.ok) {
        ++m_failed;
        answer.error = r.error.left(kMaxReasonChars);
        answer.errorKind = r.errorKind;
        if (r.errorKind != ErrorKind::MissingGraph) // the coordinator sends the input again: routine
            qWarning("node: task %lld (%s of microbatch %lld): %s", qlonglong(p.taskId),
                     qPrintable(taskKindName(p.kind)), qlonglong(p.microbatch), qPrintable(r.error));
        return m_session.sendBinary(encode(answer));
    }
    if (r.kind == EngineTask::GradientSketch || r.kind == EngineTask::TraceForward ||
        r.kind == EngineTask::TraceBackward) // values, not an output
        return m_session.sendBinary(
            TaskMessageBuilder(toJson(answer)).add(TaskFrameType::Partition, gradientPayload(r.values, 32)).take());
    answer.tokens = r.tokens;
    if (std::isfinite(r.loss)) {
        answer.loss = r.loss;
        m_lastLoss = r.loss;
    }
    switch (r.kind) {
    case EngineTask::Forward:
        ++m_forwards;
        break;
    case EngineTask::ForwardBackward:
        ++m_forwardBackwards;
        break;
    default:
        ++m_backwards;
        break;
    }
    const bool forward = r.kind == EngineTask::Forward;
    const EngineOutput& out = forward ? r.output : r.gradInput;
    if (out.isEmpty()) // the last stage's forward, stage 0's backward
        return m_session.sendBinary(encode(answer));
    const TaskFrameType type = forward ? TaskFrameType::ForwardOutput : TaskFrameType::BackwardOutput;
    // The envelope goes in the headroom the engine left in front of the frame: sent from where it lies.
    gpu::Bytes& buffer = *out.bytes;
    if (const std::optional<qsizetype> start = wrapInPlace(buffer, qsizetype(out.at), toJson(answer), type))
        return m_session.sendBinary(QByteArray::fromRawData(
            reinterpret_cast<const char*>(buffer.data()) + *start, qsizetype(buffer.size()) - *start));
    m_session.sendBinary(TaskMessageBuilder(toJson(answer), out.view().size()).add(type, out.view()).take());
}

void TaskRunner::finishGather(const Pending& p, const EngineResult& r) {
    if (r.withheld)
        return;
    AverageShare share{p.round, p.partition, p.partitions, r.ok, r.error.left(kMaxReasonChars), 0, 0};
    if (!r.ok) {
        qWarning("node: %s of round %lld: %s", qPrintable(messageTypeName(p.message)), qlonglong(p.round),
                 qPrintable(r.error));
        return m_session.sendBinary(encode(share));
    }
    if (p.message == MessageType::Average) {
        m_snapshots[p.round] =
            Snapshot{p.partition, p.partitions, r.honestValues.empty() ? r.values : r.honestValues};
        while (m_snapshots.size() > std::size_t(kMaxSnapshots))
            m_snapshots.erase(m_snapshots.begin()); // the oldest round: its result is not coming
    }
    sendShare(share, r.values, p.chunk);
}

void TaskRunner::sendShare(const AverageShare& share, const std::vector<float>& values, qint64 chunk) {
    // More than the coordinator's chunk (8b: a partition ~230 MB, a whole stage 4.4 GB) goes in chunks.
    for (const QByteArray& message : partitionMessages(share, std::span(values), chunk))
        m_session.sendBinary(message);
}

// The share a step request (or a basis) asks for.
void TaskRunner::finishShare(const Pending& p, const EngineResult& r) {
    const bool second = p.message == MessageType::GradientBasis;
    // A second share weighs what the first did (the engine divided by the same).
    const int microbatches =
        second ? (m_firstShare.step == p.step ? m_firstShare.microbatches : 0) : r.microbatches;
    GradientShare share{
        p.step, microbatches, r.basisRound, r.ok && !r.values.empty(), {}, p.bits, r.firstRound && !second, 0,
        0};
    if (share.firstRound)
        m_firstShare = {p.step, r.microbatches};
    if (!r.ok)
        share.error = r.error.left(kMaxReasonChars);
    else if (!r.hasBasis)
        share.error = QStringLiteral("it holds the basis of round %1, not %2: it takes the next round")
                          .arg(r.basisRound)
                          .arg(p.round);
    else if (r.values.empty())
        share.error = QStringLiteral("no microbatch since the last exchange");
    if (!r.ok)
        qWarning("node: step %lld: %s", qlonglong(p.step), qPrintable(r.error));
    if (!share.ok)
        return m_session.sendBinary(TaskMessageBuilder(toJson(share)).take());
    // In fewer bits the engine rounded the values as they are encoded here (bit for bit). More than the
    // coordinator's chunk goes in chunks (an 8b middle stage's share at rank 16: ~26 MB).
    for (const QByteArray& message : partitionMessages(share, gradientPayload(r.values, p.bits), p.chunk))
        m_session.sendBinary(message);
}

QJsonObject TaskRunner::status() const {
    // Tasks done, counted under their kinds' names.
    QJsonObject s{{taskKindName(TaskKind::Forward), m_forwards},
                  {taskKindName(TaskKind::ForwardBackward), m_forwardBackwards},
                  {taskKindName(TaskKind::Backward), m_backwards},
                  {QStringLiteral("failed"), m_failed},
                  {QStringLiteral("refused"), m_refused},
                  {QStringLiteral("steps_done"), m_stepsDone},
                  {QStringLiteral("averaging_rounds"), m_averagingRounds},
                  {QStringLiteral("syncs"), m_syncs},
                  {QStringLiteral("in_flight"), qint64(m_pending.size())}};
    if (m_step >= 0)
        s.insert(QStringLiteral("step"), m_step);
    if (std::isfinite(m_lastLoss))
        s.insert(QStringLiteral("last_loss"), m_lastLoss);
    // How long this node has had no data-plane task done: the app says "contributing" only while
    // they flow (a stage with nobody, a stalled coordinator, and it says so instead).
    if (m_sinceTask.isValid())
        s.insert(QStringLiteral("last_task_age_s"), double(m_sinceTask.elapsed()) / 1000);
    return s;
}

} // namespace tessera::node
