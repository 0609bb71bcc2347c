// TaskRunner: data-plane messages in, engine tasks out, and the results back as messages.
#include "node/TaskRunner.h"

#include "common/TaskMessage.h"
#include "node/EngineWorker.h"

#include <QtEndian>

#include <cmath>
#include <limits>
#include <utility>

namespace tessera::node {

// Partition frames carry the engine's floats as they lie in memory.
static_assert(Q_BYTE_ORDER == Q_LITTLE_ENDIAN, "Partition payloads are little-endian fp32");

namespace {

const QString kType = QStringLiteral("type");

// The most partitions a message may ask for (what StageEngine accepts; SPARTA uses 20).
constexpr int kMaxPartitions = 1000;

QJsonObject typed(const QString& type) {
    return QJsonObject{{kType, type}};
}

QByteArray copy(const TaskFrame* frame) {
    return frame ? frame->payload.toByteArray() : QByteArray();
}

std::array<quint32, 2> batchSeq(const TaskFrame* frame) {
    return frame ? std::array<quint32, 2>{frame->header.shape[0], frame->header.shape[1]}
                 : std::array<quint32, 2>{};
}

// The readable JSON header of a message whose frames failed to decode (to answer a task by id).
QJsonObject peekHeader(const QByteArray& message) {
    if (message.size() < 8)
        return {};
    const qsizetype json = qsizetype(qFromLittleEndian<quint32>(message.constData() + 4));
    if (json > kTaskMessageMaxJsonBytes || json > message.size() - 8)
        return {};
    Result<TaskMessage> header = decodeTaskMessage(QByteArrayView(message).first(8 + json));
    return header ? header->header : QJsonObject();
}

bool validPartitions(int partition, int partitions, bool allowAll) {
    return partitions >= 1 && partitions <= kMaxPartitions && partition < partitions &&
           (partition >= 0 || (allowAll && partition == -1));
}

} // namespace

TaskRunner::TaskRunner(EngineWorker* worker, gpu::ModelConfig config, int stage, SendBinary sendBinary,
                       SendText sendText, QObject* parent)
    : QObject(parent)
    , m_worker(worker)
    , m_config(std::move(config))
    , m_stage(stage)
    , m_sendBinary(std::move(sendBinary))
    , m_sendText(std::move(sendText))
    , m_lastLoss(std::numeric_limits<double>::quiet_NaN()) {
    // Queued: the worker emits on its own thread; results arrive here in the order it ran them.
    connect(m_worker, &EngineWorker::taskFinished, this, &TaskRunner::onTaskFinished, Qt::QueuedConnection);
}

TaskRunner::~TaskRunner() = default;

// --- messages in -------------------------------------------------------------------------------

bool TaskRunner::handleText(const QJsonObject& message) {
    const QString type = message.value(kType).toString();
    if (type == u"step") {
        EngineTask task;
        task.kind = EngineTask::Step;
        task.microbatches = EngineTask::kAllAccumulated;
        Pending p;
        p.message = type;
        p.step = message.value(u"step").toInteger(-1);
        submit(std::move(task), p);
        return true;
    }
    if (type == u"average" || type == u"sync_request") {
        const bool all = type == u"sync_request";
        Pending p;
        p.message = type;
        p.round = message.value(u"round").toInteger(-1);
        p.partition = all ? -1 : message.value(u"partition").toInt(-2);
        p.partitions = message.value(u"partitions").toInt(all ? kDefaultPartitions : 0);
        if (!validPartitions(p.partition, p.partitions, all)) {
            ++m_refused;
            qWarning("node: refusing %s for round %lld: partition %d of %d", qPrintable(type),
                     qlonglong(p.round), p.partition, p.partitions);
            QJsonObject answer = typed(QStringLiteral("average_share"));
            answer.insert(QStringLiteral("round"), p.round);
            answer.insert(QStringLiteral("partition"), p.partition);
            answer.insert(QStringLiteral("ok"), false);
            answer.insert(
                QStringLiteral("error"),
                QStringLiteral("partition %1 of %2 is not a valid split").arg(p.partition).arg(p.partitions));
            m_sendBinary(encodeTaskMessage(answer));
            return true;
        }
        EngineTask task;
        task.kind = EngineTask::Gather;
        task.partition = p.partition;
        task.partitions = p.partitions;
        submit(std::move(task), p);
        return true;
    }
    if (type == u"task") {
        // Probes stay the caller's; any other task needs its frames, which text cannot carry.
        const QString kind = message.value(u"kind").toString();
        if (kind.isEmpty() || kind == u"probe")
            return false;
        refuseTask(message,
                   QStringLiteral("a %1 task must come as a binary message with its frames").arg(kind));
        return true;
    }
    return false;
}

void TaskRunner::handleBinary(const QByteArray& bytes) {
    Result<TaskMessage> message = decodeTaskMessage(bytes);
    if (!message) {
        qWarning("node: refusing a binary message of %lld bytes: %s", qlonglong(bytes.size()),
                 message.message().c_str());
        const QJsonObject header = peekHeader(bytes);
        if (header.value(kType).toString() == u"task" && header.value(u"task_id").isDouble())
            return refuseTask(header, QString::fromStdString(message.message()));
        ++m_refused;
        return;
    }
    const QString type = message->header.value(kType).toString();
    if (type == u"task")
        return onTask(*message);
    if (type == u"average_result")
        return onAverageResult(*message);
    if (type == u"sync")
        return onSync(*message);
    ++m_refused;
    qWarning("node: ignoring a binary message of unknown type \"%s\"", qPrintable(type));
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

void TaskRunner::onTask(const TaskMessage& message) {
    const QJsonObject& h = message.header;
    if (!h.value(u"task_id").isDouble()) {
        ++m_refused;
        qWarning("node: refusing a task without a task_id");
        return;
    }
    Pending p;
    p.message = QStringLiteral("task");
    p.kind = h.value(u"kind").toString();
    p.taskId = h.value(u"task_id").toInteger();
    p.microbatch = h.value(u"microbatch").toInteger(-1);
    // Negative ids are the node's own (probes): the coordinator's are ≥ 0.
    if (p.microbatch < 0)
        return refuseTask(h, QStringLiteral("microbatch must be a number ≥ 0"));

    const TaskFrame* input = message.frame(TaskFrameType::ForwardInput);
    const TaskFrame* targets = message.frame(TaskFrameType::Targets);
    const TaskFrame* gradient = message.frame(TaskFrameType::BackwardInput);
    EngineTask task;
    task.microbatch = p.microbatch;
    task.input = copy(input);
    task.targets = copy(targets);
    task.gradOutput = copy(gradient);
    p.shape = batchSeq(gradient ? gradient : input);
    if (p.kind == u"forward") {
        if (!input)
            return refuseTask(h, QStringLiteral("a forward task needs a ForwardInput frame"));
        task.kind = EngineTask::Forward;
    } else if (p.kind == u"forward_backward") {
        if (!input || !targets)
            return refuseTask(
                h, QStringLiteral("a forward_backward task needs ForwardInput and Targets frames"));
        task.kind = EngineTask::ForwardBackward;
    } else if (p.kind == u"backward") {
        task.kind = EngineTask::Backward;
    } else {
        return refuseTask(h, QStringLiteral("unknown task kind \"%1\"").arg(p.kind));
    }
    submit(std::move(task), p);
}

void TaskRunner::onAverageResult(const TaskMessage& message) {
    const qint64 round = message.header.value(u"round").toInteger(-1);
    const int partition = message.header.value(u"partition").toInt(-2);
    const auto it = m_snapshots.find(round);
    if (it == m_snapshots.end()) {
        qInfo("node: ignoring the average of round %lld: no snapshot of it is kept", qlonglong(round));
        return;
    }
    Snapshot snapshot = std::move(it->second);
    m_snapshots.erase(it);
    const TaskFrame* frame = message.frame(TaskFrameType::Partition);
    Result<std::vector<float>> average =
        frame ? partitionValues(*frame) : Result<std::vector<float>>(makeError("no Partition frame"));
    if (!average || partition != snapshot.partition || average->size() != snapshot.values.size()) {
        ++m_refused;
        qWarning(
            "node: refusing the average of round %lld (partition %d, %lld values; sent partition %d, %lld "
            "values): %s",
            qlonglong(round), partition, average ? qlonglong(average->size()) : -1LL, snapshot.partition,
            qlonglong(snapshot.values.size()),
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
    p.message = QStringLiteral("average_result");
    p.round = round;
    p.partition = task.partition;
    p.partitions = task.partitions;
    submit(std::move(task), p);
}

void TaskRunner::onSync(const TaskMessage& message) {
    Pending p;
    p.message = QStringLiteral("sync");
    p.round = message.header.value(u"round").toInteger(-1);
    p.partitions = message.header.value(u"partitions").toInt(kDefaultPartitions);
    const TaskFrame* frame = message.frame(TaskFrameType::Partition);
    Result<std::vector<float>> values =
        frame ? partitionValues(*frame) : Result<std::vector<float>>(makeError("no Partition frame"));
    if (!values || !validPartitions(-1, p.partitions, true)) {
        ++m_refused;
        const QString error = values ? QStringLiteral("%1 partitions is not a valid split").arg(p.partitions)
                                     : QString::fromStdString(values.message());
        qWarning("node: refusing the sync of round %lld: %s", qlonglong(p.round), qPrintable(error));
        QJsonObject answer = typed(QStringLiteral("sync_done"));
        answer.insert(QStringLiteral("round"), p.round);
        answer.insert(QStringLiteral("ok"), false);
        answer.insert(QStringLiteral("error"), error);
        m_sendText(answer);
        return;
    }
    EngineTask task;
    task.kind = EngineTask::SetWeights;
    task.partition = -1;
    task.partitions = p.partitions;
    task.values = std::move(values).value();
    submit(std::move(task), p);
}

void TaskRunner::refuseTask(const QJsonObject& header, const QString& error) {
    ++m_refused;
    ++m_failed;
    qWarning("node: refusing task %lld: %s", qlonglong(header.value(u"task_id").toInteger(-1)),
             qPrintable(error));
    QJsonObject answer = typed(QStringLiteral("task_result"));
    answer.insert(QStringLiteral("task_id"), header.value(u"task_id").toInteger(-1));
    answer.insert(QStringLiteral("kind"), header.value(u"kind").toString());
    answer.insert(QStringLiteral("microbatch"), header.value(u"microbatch").toInteger(-1));
    answer.insert(QStringLiteral("ok"), false);
    answer.insert(QStringLiteral("error"), error);
    m_sendBinary(encodeTaskMessage(answer));
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

    if (p.message == u"task")
        return finishTask(p, result);
    if (p.message == u"average" || p.message == u"sync_request")
        return finishGather(p, result);
    if (p.message == u"step") {
        QJsonObject answer = typed(QStringLiteral("step_done"));
        answer.insert(QStringLiteral("step"), p.step);
        answer.insert(QStringLiteral("ok"), result.ok);
        if (result.ok) {
            m_step = p.step;
            ++m_stepsDone;
            answer.insert(QStringLiteral("microbatches"), result.microbatches);
        } else {
            qWarning("node: step %lld: %s", qlonglong(p.step), qPrintable(result.error));
            answer.insert(QStringLiteral("error"), result.error);
        }
        return m_sendText(answer);
    }
    if (p.message == u"average_result") {
        if (result.ok)
            ++m_averagingRounds;
        else
            qWarning("node: averaging round %lld: %s", qlonglong(p.round), qPrintable(result.error));
        return;
    }
    if (p.message == u"sync") {
        QJsonObject answer = typed(QStringLiteral("sync_done"));
        answer.insert(QStringLiteral("round"), p.round);
        answer.insert(QStringLiteral("ok"), result.ok);
        if (result.ok) {
            ++m_syncs;
            qInfo("node: weights synced (round %lld)", qlonglong(p.round));
        } else {
            qWarning("node: sync of round %lld: %s", qlonglong(p.round), qPrintable(result.error));
            answer.insert(QStringLiteral("error"), result.error);
        }
        return m_sendText(answer);
    }
}

void TaskRunner::finishTask(const Pending& p, const EngineResult& r) {
    QJsonObject answer = typed(QStringLiteral("task_result"));
    answer.insert(QStringLiteral("task_id"), p.taskId);
    answer.insert(QStringLiteral("kind"), p.kind);
    answer.insert(QStringLiteral("microbatch"), p.microbatch);
    answer.insert(QStringLiteral("ok"), r.ok);
    answer.insert(QStringLiteral("compute_seconds"), r.computeSeconds);
    if (!r.ok) {
        ++m_failed;
        answer.insert(QStringLiteral("error"), r.error);
        if (r.needsInput)
            answer.insert(QStringLiteral("needs_input"), true);
        else
            qWarning("node: task %lld (%s of microbatch %lld): %s", qlonglong(p.taskId), qPrintable(p.kind),
                     qlonglong(p.microbatch), qPrintable(r.error));
        return m_sendBinary(encodeTaskMessage(answer));
    }
    answer.insert(QStringLiteral("tokens"), r.tokens);
    if (std::isfinite(r.loss)) {
        answer.insert(QStringLiteral("loss"), r.loss);
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
    const QByteArray& out = forward ? r.output : r.gradInput;
    if (out.isEmpty()) // the last stage's forward, stage 0's backward
        return m_sendBinary(encodeTaskMessage(answer));
    TaskFrameHeader header;
    header.type = forward ? TaskFrameType::ForwardOutput : TaskFrameType::BackwardOutput;
    header.taskId = p.taskId;
    header.microbatch = p.microbatch;
    header.stage = m_stage;
    header.codec = quint8(m_config.codec);
    header.shape = {p.shape[0], p.shape[1], quint32(m_config.dModel)};
    const TaskMessageFrame frame{header, out};
    m_sendBinary(encodeTaskMessage(answer, std::span(&frame, 1)));
}

void TaskRunner::finishGather(const Pending& p, const EngineResult& r) {
    if (!r.ok) {
        qWarning("node: %s of round %lld: %s", qPrintable(p.message), qlonglong(p.round),
                 qPrintable(r.error));
        QJsonObject answer = typed(QStringLiteral("average_share"));
        answer.insert(QStringLiteral("round"), p.round);
        answer.insert(QStringLiteral("partition"), p.partition);
        answer.insert(QStringLiteral("ok"), false);
        answer.insert(QStringLiteral("error"), r.error);
        return m_sendBinary(encodeTaskMessage(answer));
    }
    if (p.message == u"average") {
        m_snapshots[p.round] = Snapshot{p.partition, p.partitions, r.values};
        while (m_snapshots.size() > std::size_t(kMaxSnapshots))
            m_snapshots.erase(m_snapshots.begin()); // the oldest round: its result is not coming
    }
    sendPartition(p.round, p.partition, p.partitions, r.values);
}

void TaskRunner::sendPartition(qint64 round, int partition, int partitions,
                               const std::vector<float>& values) {
    QJsonObject answer = typed(QStringLiteral("average_share"));
    answer.insert(QStringLiteral("round"), round);
    answer.insert(QStringLiteral("partition"), partition);
    answer.insert(QStringLiteral("partitions"), partitions);
    answer.insert(QStringLiteral("ok"), true);
    // A whole large stage does not fit one message: say so rather than send what the other end
    // must refuse.
    const qint64 bytes = qint64(values.size()) * qint64(sizeof(float));
    if (bytes > kTaskMessageMaxBytes - kTaskMessageMaxJsonBytes - kTaskFrameHeaderBytes - 8) {
        answer.insert(QStringLiteral("ok"), false);
        answer.insert(QStringLiteral("error"),
                      QStringLiteral("%1 values (%2 bytes) exceed the %3-byte message limit")
                          .arg(values.size())
                          .arg(bytes)
                          .arg(kTaskMessageMaxBytes));
        qWarning("node: average_share of round %lld: %s", qlonglong(round),
                 qPrintable(answer.value(u"error").toString()));
        return m_sendBinary(encodeTaskMessage(answer));
    }
    TaskFrameHeader header = partitionHeader(m_stage, qint64(values.size()));
    header.taskId = round;
    const QByteArrayView payload(reinterpret_cast<const char*>(values.data()),
                                 qsizetype(values.size() * sizeof(float)));
    const TaskMessageFrame frame{header, payload};
    m_sendBinary(encodeTaskMessage(answer, std::span(&frame, 1)));
}

QJsonObject TaskRunner::status() const {
    QJsonObject s{{QStringLiteral("forward"), m_forwards},
                  {QStringLiteral("forward_backward"), m_forwardBackwards},
                  {QStringLiteral("backward"), m_backwards},
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
    return s;
}

} // namespace tessera::node
