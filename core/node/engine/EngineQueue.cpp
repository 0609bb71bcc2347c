// SPDX-License-Identifier: Apache-2.0
#include "node/engine/EngineQueue.h"

#include <algorithm>

namespace tessera::node {

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
    // A low rank's second share needs nothing the queued microbatches make (its gradients were
    // collected at the first): it goes ahead of them, so the step's exchange does not wait on the
    // next step's compute (the asynchronous pipeline). Other tasks keep their order.
    if (task.kind == EngineTask::ShareOnBasis) {
        const auto dataPlane = std::find_if(m_tasks.begin(), m_tasks.end(), [](const EngineTask& t) {
            return t.kind == EngineTask::Forward || t.kind == EngineTask::Backward ||
                   t.kind == EngineTask::ForwardBackward;
        });
        m_tasks.insert(dataPlane, std::move(task));
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
