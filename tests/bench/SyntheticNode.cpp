// SPDX-License-Identifier: Apache-2.0
#include "SyntheticNode.h"

#include "base/TokenFrame.h"
#include "codec/Codec.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QJsonDocument>
#include <QTimer>

#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace tessera::bench {

using namespace protocol;

namespace {

QByteArray bytesOf(const std::vector<std::uint8_t>& v) {
    return QByteArray(reinterpret_cast<const char*>(v.data()), qsizetype(v.size()));
}

QByteArray encode(const SessionMessage& header) {
    return TaskMessageBuilder(toJson(header)).take();
}

} // namespace

SyntheticFrames makeSyntheticFrames(const gpu::ModelConfig& config, int batch, int seq) {
    gpu::CodecOptions options;
    options.maxTokens = std::max<std::int64_t>(options.maxTokens, std::int64_t(batch) * seq);
    Result<std::unique_ptr<gpu::Codec>> codec = gpu::makeCodec(config, options);
    if (!codec)
        throw std::runtime_error("the run's codec: " + codec.message());
    SyntheticFrames frames;
    frames.tokenBytes = (*codec)->tokenBytes();
    frames.tokens = qint64(batch) * seq;
    frames.vocab = config.vocabSize;
    frames.maxSeqLen = config.maxSeqLen;
    const torch::Tensor ids = torch::zeros({batch, seq}, torch::kInt64); // overwritten per task
    for (int s = 0; s < config.stages; ++s) {
        torch::manual_seed(1000 + s);
        const torch::Tensor hidden = torch::randn({batch, seq, config.dModel});
        const torch::Tensor grad = torch::randn({batch, seq, config.dModel}) * 1e-3;
        frames.stages.push_back(StageFrames{bytesOf((*codec)->encodeActivation(hidden, ids)),
                                            bytesOf((*codec)->encodeGradient(grad, ids))});
    }
    return frames;
}

SyntheticNode::SyntheticNode(const SyntheticFrames& frames, SyntheticDelays delays,
                             SyntheticCounters& counters, int stage, int stages, qint64 version)
    : m_frames(frames)
    , m_delays(delays)
    , m_counters(counters)
    , m_stage(stage)
    , m_stages(stages)
    , m_version(version) {
    connect(&m_socket, &QWebSocket::connected, this, [this] {
        m_socket.sendTextMessage(toText(Ready{m_stage, m_version, 0, 0}));
    });
    connect(&m_socket, &QWebSocket::disconnected, this, [this] {
        ++m_counters.closed;
        std::fprintf(stderr, "synthetic node (stage %d): session closed: %d %s\n", m_stage,
                     int(m_socket.closeCode()), qPrintable(m_socket.closeReason()));
    });
    connect(&m_socket, &QWebSocket::textMessageReceived, this, &SyntheticNode::onText);
    connect(&m_socket, &QWebSocket::binaryMessageReceived, this, &SyntheticNode::onBinary);
    // A session is dropped after 30 s of silence.
    auto* heartbeat = new QTimer(this);
    connect(heartbeat, &QTimer::timeout, this, [this] {
        if (isOpen())
            m_socket.sendTextMessage(toText(Heartbeat{}));
    });
    heartbeat->start(10'000);
}

void SyntheticNode::open(const QUrl& url, const QSslConfiguration& ssl, const QString& token) {
    m_socket.setSslConfiguration(ssl);
    m_socket.setMaxAllowedIncomingMessageSize(quint64(kTaskMessageMaxBytes) + 4096);
    QNetworkRequest request(url);
    request.setRawHeader("Authorization", "Bearer " + token.toLatin1());
    m_socket.open(request);
}

void SyntheticNode::sendLater(int delayMs, QByteArray message) {
    QTimer::singleShot(delayMs, this, [this, message = std::move(message)] {
        if (!isOpen())
            return;
        m_counters.bytesOut += message.size();
        m_socket.sendBinaryMessage(message);
    });
}

void SyntheticNode::onText(const QString& text) {
    Result<SessionMessage> message = parseSessionText(text, Direction::ToNode, kSessionTextMaxBytes);
    if (!message)
        return;
    if (const auto* task = std::get_if<Task>(&*message); task && task->kind == TaskKind::Probe) {
        TaskResult r;
        r.taskId = task->taskId;
        r.kind = TaskKind::Probe;
        r.ok = true;
        r.computeSeconds = m_delays.forwardMs / 1000.0;
        r.tokens = qint64(task->batch) * task->seq;
        const QString answer = toText(r);
        QTimer::singleShot(m_delays.forwardMs, this, [this, answer] {
            if (isOpen())
                m_socket.sendTextMessage(answer);
        });
    } else if (const auto* step = std::get_if<Step>(&*message)) {
        ++m_counters.steps;
        const StepDone done{step->step, true, std::exchange(m_microbatchesSinceStep, 0), {}};
        m_socket.sendTextMessage(toText(done));
    } else if (const auto* notice = std::get_if<ErrorNotice>(&*message)) {
        if (++m_counters.refusals <= 5)
            std::fprintf(stderr, "synthetic node (stage %d): the coordinator refused: %s\n", m_stage,
                         qPrintable(notice->error));
    } else if (const auto* reassign = std::get_if<Reassign>(&*message)) {
        m_stage = reassign->stage; // its frames are the new stage's; ready again at once
        m_socket.sendTextMessage(toText(Ready{m_stage, m_version, 0, 0}));
    }
}

void SyntheticNode::onBinary(const QByteArray& bytes) {
    m_counters.bytesIn += bytes.size();
    Result<TaskMessage> message = decodeTaskMessage(bytes);
    Result<SessionMessage> header =
        message ? parseSessionMessage(message->header, Direction::ToNode, Transport::Binary)
                : message.error();
    if (!header)
        return;
    if (const auto* sync = std::get_if<Sync>(&*header)) { // a ghost: take the chunk at once
        const TaskFrame* part = message->frame(TaskFrameType::Partition);
        const qint64 received = sync->offset + (part ? part->payload.size() / 4 : 0);
        m_socket.sendTextMessage(toText(SyncDone{sync->round, true, {}, received}));
        return;
    }
    const auto* task = std::get_if<Task>(&*header);
    if (!task)
        return;
    ++m_counters.tasks;
    const StageFrames& frames = m_frames.stages[size_t(m_stage)];
    const bool last = m_stage == m_stages - 1;
    TaskResult r;
    r.taskId = task->taskId;
    r.kind = task->kind;
    r.microbatch = task->microbatch;
    r.ok = true;
    r.tokens = m_frames.tokens;
    QByteArray output;
    TaskFrameType type = TaskFrameType::BackwardOutput;
    int delayMs = m_delays.backwardMs;
    if (task->kind == TaskKind::Forward && !last) {
        ++m_counters.forwards;
        delayMs = m_delays.forwardMs;
        type = TaskFrameType::ForwardOutput;
        output = frames.activation; // detached below: the template stays as it is
        const qsizetype idBytes = m_frames.tokens * m_frames.tokenBytes;
        char* ids = output.data() + output.size() - idBytes;
        const TaskFrame* in = message->frame(TaskFrameType::ForwardInput);
        if (!in)
            return;
        if (m_stage == 0) { // a token frame: its ids in the codec's width
            Result<gpu::TokenBatch> tokens = gpu::decodeTokens(
                {reinterpret_cast<const std::uint8_t*>(in->payload.data()), size_t(in->payload.size())},
                m_frames.vocab, m_frames.maxSeqLen, m_frames.tokens);
            if (!tokens || qint64(tokens->ids.size()) != m_frames.tokens)
                return;
            for (qint64 i = 0; i < m_frames.tokens; ++i)
                std::memcpy(ids + i * m_frames.tokenBytes, &tokens->ids[size_t(i)],
                            size_t(m_frames.tokenBytes));
        } else { // the previous stage's activation: its ids are where ours go
            if (in->payload.size() < idBytes)
                return;
            std::memcpy(ids, in->payload.data() + in->payload.size() - idBytes, size_t(idBytes));
        }
    } else if (task->kind == TaskKind::ForwardBackward) {
        ++m_counters.forwards;
        ++m_counters.lastStageForwards;
        ++m_microbatchesSinceStep;
        delayMs = m_delays.forwardMs + m_delays.backwardMs;
        r.loss = 3.0 + 0.01 * double(task->microbatch % 7);
        output = frames.gradient;
    } else if (task->kind == TaskKind::Backward) {
        ++m_microbatchesSinceStep;
        if (m_stage > 0)
            output = frames.gradient; // stage 0 sends nothing back
    } else {
        return;
    }
    r.computeSeconds = delayMs / 1000.0;
    if (output.isEmpty())
        return sendLater(delayMs, encode(r));
    sendLater(delayMs, TaskMessageBuilder(toJson(r), output.size()).add(type, output).take());
}

} // namespace tessera::bench
