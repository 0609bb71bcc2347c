// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShareChunks: the coordinator's side of protocol/PartitionChunks — each node's share (an
// average_share, or a gradient_share: one instance each) that came in chunks put back together, one
// at a time per node, before the averager, the auditor or the gradient averager reads it (a
// restart's Reclaim writes its chunks to disk itself). Only for a node one of them asked for that
// round: a chunk nobody asked for is not held. At most the largest stage's weights (4-byte words)
// per node.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "protocol/PartitionChunks.h"

#include <QString>

#include <functional>
#include <map>
#include <optional>

namespace tessera::coordinator {

class ShareChunks final {
public:
    explicit ShareChunks(const gpu::ModelConfig& config);

    // A chunk (total > 0) of `node`'s share of `round` (a SPARTA round, or a step), `part` (a
    // partition, or a gradient exchange's phase), `message` its message. Once it completes the share:
    // the whole (one message of one Partition frame). nullopt while more are to come, or when its first
    // chunk came unasked (`asked` says whether anybody waits for the round). An error, and what came
    // before dropped, when it does not continue that (PartitionAssembly says how).
    Result<std::optional<protocol::TaskMessage>> add(const QString& node, qint64 round, int part,
                                                     qint64 offset, qint64 total,
                                                     const protocol::TaskMessage& message,
                                                     const std::function<bool()>& asked);
    void nodeGone(const QString& node) { m_nodes.erase(node); }
    qint64 received() const { return m_received; } // chunks taken

private:
    qint64 m_maxValues = 0;
    std::map<QString, protocol::PartitionAssembly> m_nodes;
    qint64 m_received = 0;
};

} // namespace tessera::coordinator
