// SPDX-License-Identifier: Apache-2.0
#include "node/engine/EngineQueue.h"

#include <iterator>

namespace tessera::node {

namespace {

bool isMicrobatch(EngineTask::Kind kind) {
    return kind == EngineTask::Forward || kind == EngineTask::Backward || kind == EngineTask::ForwardBackward;
}

} // namespace

qint64 EngineQueue::bytesOf(const EngineTask& task) {
    qint64 bytes = task.message.size();
    if (task.message.isEmpty())
        bytes += task.input.size() + task.targets.size() + task.gradOutput.size();
    bytes += qint64((task.values.size() + task.snapshot.size()) * sizeof(float));
    return bytes;
}

QString EngineQueue::push(EngineTask task) {
    if (m_tasks.size() >= kMaxTasks)
        return QStringLiteral("the engine's queue is full (%1 tasks)").arg(kMaxTasks);
    const qint64 bytes = bytesOf(task);
    if (!m_tasks.empty() && m_bytes + bytes > kMaxBytes)
        return QStringLiteral("the engine's queue is full (%1 MiB waiting, at most %2 MiB)")
            .arg(m_bytes >> 20)
            .arg(kMaxBytes >> 20);
    m_bytes += bytes;
    // A step's shares need nothing the queued microbatches make: the coordinator asks for them once
    // every microbatch of the step was answered, and the asynchronous pipeline's next-step
    // microbatches keep their gradients apart (engine/WeightVersions). So they go ahead of the
    // microbatches at the queue's end, and the step's exchange does not wait on the next step's
    // compute — but never ahead of another control task (a result to apply, a step, an average):
    // those keep their order.
    if (task.kind == EngineTask::ShareGradients || task.kind == EngineTask::ShareOnBasis) {
        auto at = m_tasks.end();
        while (at != m_tasks.begin() && isMicrobatch(std::prev(at)->kind))
            --at;
        m_tasks.insert(at, std::move(task));
        return QString();
    }
    m_tasks.push_back(std::move(task));
    return QString();
}

std::optional<EngineTask> EngineQueue::take() {
    if (m_tasks.empty())
        return std::nullopt;
    EngineTask task = std::move(m_tasks.front());
    m_tasks.pop_front();
    m_bytes -= bytesOf(task);
    return task;
}

std::deque<EngineTask> EngineQueue::takeAll() {
    std::deque<EngineTask> tasks;
    tasks.swap(m_tasks);
    m_bytes = 0;
    return tasks;
}

void EngineQueue::eraseIf(const std::function<bool(const EngineTask&)>& drop) {
    std::erase_if(m_tasks, drop);
    m_bytes = 0;
    for (const EngineTask& task : m_tasks)
        m_bytes += bytesOf(task);
}

} // namespace tessera::node
