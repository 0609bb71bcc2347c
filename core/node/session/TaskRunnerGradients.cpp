// SPDX-License-Identifier: Apache-2.0
// TaskRunner's side of the gradient exchange (coordinator/training/GradientAverager): the share a
// step request asks for, a low rank's second share on the basis the coordinator answered, and the
// result every replica applies.
#include "node/session/TaskRunner.h"

#include "base/BlockQuant.h"
#include "node/engine/EngineWorker.h"
#include "protocol/TaskMessage.h"

namespace tessera::node {

using namespace tessera::protocol;

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
        m_sendText(
            StepDone{header.step, false, 0, QString::fromStdString(values.message()).left(kMaxReasonChars)});
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
        return m_sendBinary(TaskMessageBuilder(toJson(refused)).take());
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
        return m_sendBinary(TaskMessageBuilder(toJson(share)).take());
    // In fewer bits the engine rounded the values as they are encoded here (bit for bit). More than the
    // coordinator's chunk goes in chunks (an 8b middle stage's share at rank 16: ~26 MB).
    for (const QByteArray& message : partitionMessages(share, gradientPayload(r.values, p.bits), p.chunk))
        m_sendBinary(message);
}

} // namespace tessera::node
