// NodeProbes: probe tasks out, seconds per token in.
#include "coordinator/training/NodeProbes.h"

namespace tessera::coordinator {

void NodeProbes::start(const QString& node) {
    protocol::Task probe;
    probe.taskId = m_nextTaskId++;
    probe.kind = protocol::TaskKind::Probe;
    probe.batch = kBatch;
    probe.seq = kSeq;
    probe.seed = probe.taskId;
    if (m_sendText(node, probe))
        m_pending.insert(node, probe.taskId);
}

bool NodeProbes::onResult(const QString& node, const protocol::TaskResult& result) {
    const auto it = m_pending.constFind(node);
    if (result.kind != protocol::TaskKind::Probe || it == m_pending.constEnd() || *it != result.taskId)
        return false;
    m_pending.remove(node);
    if (result.ok && result.computeSeconds > 0 && result.tokens > 0) {
        const double secondsPerToken = result.computeSeconds / double(result.tokens);
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
