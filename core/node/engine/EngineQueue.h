// SPDX-License-Identifier: Apache-2.0
#pragma once
// EngineQueue: the tasks waiting for the node's engine, bounded in count and in bytes, so that a
// coordinator sending faster than this node computes — or a hostile one flooding it with tasks,
// syncs or averages of the largest size a message may have — cannot fill the node's memory.
// The engine thread alone uses it.

#include "node/engine/EngineTask.h"

#include <QString>

#include <deque>
#include <functional>
#include <optional>

namespace tessera::node {

class EngineQueue final {
public:
    static constexpr std::size_t kMaxTasks = 4096;
    // What the queued tasks may hold together: their messages and value vectors. A task alone
    // in an empty queue is always taken (one message is at most protocol::kTaskMessageMaxBytes).
    static constexpr qint64 kMaxBytes = qint64(1) << 30;

    // What a queued task keeps in memory: its message (the frames are views into it), the frames
    // it owns when it came without one, and its value vectors.
    static qint64 bytesOf(const EngineTask& task);

    // Empty when queued; otherwise why not, in words (the task was not queued).
    QString push(EngineTask task);
    // The oldest task; nullopt when empty.
    std::optional<EngineTask> take();
    std::deque<EngineTask> takeAll();
    void eraseIf(const std::function<bool(const EngineTask&)>& drop);
    void clear() { takeAll(); }

    bool empty() const { return m_tasks.empty(); }
    std::size_t size() const { return m_tasks.size(); }
    qint64 bytes() const { return m_bytes; }

private:
    std::deque<EngineTask> m_tasks;
    qint64 m_bytes = 0;
};

} // namespace tessera::node
