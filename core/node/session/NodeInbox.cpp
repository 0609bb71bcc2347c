// SPDX-License-Identifier: Apache-2.0
// NodeInbox: the coordinator's messages, decoded once and visited once.
#include "node/session/NodeInbox.h"

#include "node/session/TaskRunner.h"
#include "protocol/TaskMessage.h"

namespace tessera::node {

using namespace tessera::protocol;

// Text messages come with no frames; the binary-only ones (average_result, sync, gradient_result,
// gradient_basis) always have them: the parser refuses them as text. A binary message reaches here
// only while there is a runner (receiveBinary).
struct NodeInbox::Delivery {
    NodeInbox& inbox;
    const TaskMessage* frames;

    TaskRunner* runner() const { return inbox.m_runner.data(); }

    void operator()(const HeartbeatAck&) const {
        // Nothing: the session took it (its ack keeps the link alive) and does not pass it on.
    }
    void operator()(const ErrorNotice& error) const {
        qWarning("node: the coordinator says: %s", qPrintable(error.error));
    }
    void operator()(const Task& task) const {
        // A task with frames is the data plane's (a probe sent so is refused there); probes come as
        // text and are the engine's.
        if (frames)
            return runner()->receive(task, *frames);
        if (task.kind == TaskKind::Probe)
            return Q_EMIT inbox.probeAsked(task);
        // Between stages (a reassign) there is no runner: only probes run.
        if (!runner()) {
            qInfo("node: ignoring a %s task: this node is switching stage",
                  qPrintable(taskKindName(task.kind)));
            return;
        }
        // Any other task needs its frames, which text cannot carry.
        runner()->refuseTask(task.taskId, task.kind, task.microbatch,
                             QStringLiteral("a %1 task must come as a binary message with its frames")
                                 .arg(taskKindName(task.kind)));
    }
    // Step, average and sync_request between stages (no runner): dropped.
    void operator()(const Step& step) const {
        if (runner())
            runner()->receive(step);
    }
    void operator()(const Average& average) const {
        if (runner())
            runner()->receive(average);
    }
    void operator()(const SyncRequest& request) const {
        if (runner())
            runner()->receive(request);
    }
    void operator()(const AverageResult& result) const {
        if (frames)
            runner()->receive(result, *frames);
    }
    void operator()(const Sync& sync) const {
        if (frames)
            runner()->receive(sync, *frames);
    }
    void operator()(const GradientResult& result) const {
        if (frames)
            runner()->receive(result, *frames);
    }
    void operator()(const GradientBasis& basis) const {
        if (frames)
            runner()->receive(basis, *frames);
    }
    void operator()(const Reassign& reassign) const { Q_EMIT inbox.reassigned(reassign); }
    void operator()(const Credits&) const { Q_EMIT inbox.creditsWaiting(); }
};

NodeInbox::NodeInbox(QObject* parent)
    : QObject(parent) {}

NodeInbox::~NodeInbox() = default;

void NodeInbox::setRunner(TaskRunner* runner) {
    m_runner = runner;
}

void NodeInbox::receive(const ToNodeMessage& message) {
    deliver(message, nullptr);
}

void NodeInbox::receiveBinary(const QByteArray& bytes) {
    // Between stages (a reassign) there is no runner: the data plane's messages are dropped unread
    // (probes come as text).
    if (!m_runner)
        return;
    QJsonObject readable;
    Result<TaskMessage> message = decodeTaskMessage(bytes, {}, &readable);
    Result<SessionMessage> header =
        message ? parseSessionMessage(message->header, Direction::ToNode, Transport::Binary)
                : message.error();
    if (!header)
        return refuseBinary(bytes.size(), QString::fromStdString(header.message()), readable);
    // Parsed as sent to the node: it is always one of the node's messages.
    if (const std::optional<ToNodeMessage> received = receivedAs<ToNodeMessage>(std::move(*header)))
        deliver(*received, &*message);
}

void NodeInbox::deliver(const ToNodeMessage& message, const TaskMessage* frames) {
    std::visit(Delivery{*this, frames}, message);
}

void NodeInbox::refuseBinary(qsizetype bytes, const QString& error, const QJsonObject& readable) {
    qWarning("node: refusing a binary message of %lld bytes: %s", qlonglong(bytes), qPrintable(error));
    // A task whose id reads is answered by it, so the coordinator retries it at once.
    if (const std::optional<qint64> taskId = readableTaskId(readable)) {
        const Result<SessionMessage> task =
            parseSessionMessage(readable, Direction::ToNode, Transport::Binary);
        const Task* t = task ? std::get_if<Task>(&*task) : nullptr;
        return m_runner->refuseTask(*taskId, t ? t->kind : TaskKind::Forward, t ? t->microbatch : -1, error);
    }
    m_runner->refuseUnreadable();
}

} // namespace tessera::node
