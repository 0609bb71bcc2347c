// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/ShareChunks.h"

#include <algorithm>

namespace tessera::coordinator {

ShareChunks::ShareChunks(const gpu::ModelConfig& config) {
    for (int stage = 0; stage < config.stages; ++stage)
        m_maxValues = std::max<qint64>(m_maxValues, config.stageParameterCount(stage));
}

Result<std::optional<protocol::TaskMessage>> ShareChunks::add(const QString& node, qint64 round, int part,
                                                              qint64 offset, qint64 total,
                                                              const protocol::TaskMessage& message,
                                                              const std::function<bool()>& asked) {
    auto it = m_nodes.find(node);
    if (offset == 0 && !asked())
        return std::optional<protocol::TaskMessage>(); // nobody asked: nothing of it is held
    if (it == m_nodes.end())
        it = m_nodes.emplace(node, protocol::PartitionAssembly(m_maxValues)).first;
    Result<std::optional<protocol::TaskMessage>> whole = it->second.add(message, round, part, offset, total);
    if (whole)
        ++m_received;
    return whole;
}

} // namespace tessera::coordinator
