// SPDX-License-Identifier: Apache-2.0
// EngineHost: the worker's signals, filtered and remembered for the node.
#include "node/engine/EngineHost.h"

#include "node/engine/EngineThread.h"
#include "node/engine/EngineWorker.h"

#include <algorithm>

namespace tessera::node {

EngineHost::EngineHost(double limit, QObject* parent)
    : QObject(parent)
    , m_thread(std::make_unique<EngineThread>()) {
    EngineWorker* w = m_thread->worker();
    connect(w, &EngineWorker::loaded, this, [this](const QString& error, qint64 parameters) {
        ++m_answered;
        if (m_answered < m_requested || m_answered <= m_voidThrough)
            return; // a stage left since (a reassign), or a load a later one replaces
        m_loaded = error.isEmpty();
        Q_EMIT stageLoaded(error, parameters);
    });
    connect(w, &EngineWorker::taskFinished, this, [this](const EngineResult& result) {
        // Data-plane tasks are answered by the runner, which listens to the worker too.
        if (result.kind != EngineTask::Probe)
            return;
        protocol::TaskResult reply;
        reply.taskId = result.taskId;
        reply.kind = protocol::TaskKind::Probe;
        reply.ok = result.ok;
        reply.computeSeconds = result.computeSeconds;
        reply.tokens = result.tokens;
        reply.error = result.error.left(protocol::kMaxReasonChars);
        reply.errorKind = result.errorKind;
        Q_EMIT probeAnswered(reply);
    });
    connect(w, &EngineWorker::pausedChanged, this, [this](bool paused) {
        m_paused = paused;
        Q_EMIT pausedChanged(paused);
    });
    connect(w, &EngineWorker::statsChanged, this, [this](const EngineStats& stats) { m_stats = stats; });
    w->setLimit(limit);
}

EngineHost::~EngineHost() = default;

EngineWorker* EngineHost::worker() const {
    return m_thread->worker();
}

void EngineHost::load(const EngineLoadOptions& options) {
    m_loaded = false;
    ++m_requested;
    worker()->load(options);
}

void EngineHost::probe(const protocol::Task& task) {
    EngineTask probe;
    probe.taskId = task.taskId;
    probe.kind = EngineTask::Probe;
    probe.batch = std::clamp(task.batch, 1, 64);
    probe.seq = std::clamp(task.seq, 1, 4096);
    probe.seed = quint64(task.seed);
    worker()->submit(probe);
}

void EngineHost::voidLoads() {
    m_voidThrough = m_requested;
    m_loaded = false;
}

} // namespace tessera::node
