// SPDX-License-Identifier: Apache-2.0
// NodeProbes: probe tasks out, seconds per token in.
#include "coordinator/training/NodeProbes.h"

#include "common/MonotonicClock.h"

namespace tessera::coordinator {

void NodeProbes::start(const QString& node) {
    protocol::Task probe;
    probe.taskId = m_nextTaskId++;
    probe.kind = protocol::TaskKind::Probe;
    probe.batch = kBatch;
    probe.seq = kSeq;
    probe.seed = probe.taskId;
    if (m_sendText(node, probe))
        m_pending.insert(node, Pending{probe.taskId, MonotonicClock::nowMs()});
}

bool NodeProbes::onResult(const QString& node, const protocol::TaskResult& result) {
    const auto it = m_pending.constFind(node);
    if (result.kind != protocol::TaskKind::Probe || it == m_pending.constEnd() || it->taskId != result.taskId)
        return false;
    // The coordinator's own clock, from sending to the answer: a node cannot claim to be faster
    // than it answers (its compute_seconds is its word, not a measurement).
    const qint64 elapsedMs = std::max<qint64>(1, MonotonicClock::nowMs() - it->sentAtMs);
    m_pending.remove(node);
    if (result.ok) {
        const double secondsPerToken = double(elapsedMs) / 1000.0 / double(kBatch * kSeq);
        m_speed.insert(node, secondsPerToken);
        qInfo("coordinator: node %s probe: %.3g s per token", qPrintable(node.left(12)), secondsPerToken);
    } else {
        qWarning("coordinator: node %s probe failed: %s", qPrintable(node.left(12)),
                 qPrintable(result.error.left(200)));
    }
    return true;
}

std::optional<double> NodeProbes::secondsPerToken(const QString& node) const {
    const auto it = m_speed.constFind(node);
    if (it == m_speed.constEnd())
        return std::nullopt;
    return *it;
}

void NodeProbes::forget(const QString& node) {
    m_pending.remove(node);
    m_speed.remove(node);
}

} // namespace tessera::coordinator
