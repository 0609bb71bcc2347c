// SPDX-License-Identifier: Apache-2.0
// Trainer's shares: an average_share or a gradient_share, whole or in chunks (protocol/PartitionChunks,
// put together by ShareChunks first — except a reclaim's, which Reclaim writes to disk chunk by
// chunk), to whoever asked for it.
#include "coordinator/training/Trainer.h"

#include "coordinator/api/SessionApi.h"
#include "coordinator/training/Reclaim.h"
#include "protocol/TaskMessage.h"

namespace tessera::coordinator {

namespace {

// A chunk put together: the whole, handed on under a header that says so; a chunk that does not
// continue what came before is refused in words.
template <class Share, class Handle>
void takeChunk(Result<std::optional<protocol::TaskMessage>> whole, const QString& node, Share share,
               SessionApi& sessions, Handle handle) {
    if (!whole) {
        qWarning("trainer: node %s: %s", qPrintable(node.left(12)), whole.message().c_str());
        sessions.sendText(node, protocol::ErrorNotice{QString::fromStdString(whole.message())});
    } else if (*whole) {
        share.offset = share.total = 0;
        handle(share, **whole);
    }
}

} // namespace

void Trainer::onShare(const QString& nodeId, const protocol::AverageShare& share,
                      const protocol::TaskMessage& message) {
    if (m_reclaim->onShare(nodeId, share, message)) // a reclaim writes the chunks as they come
        return;
    if (share.total > 0) // a chunk: read once the share is whole
        return takeChunk(m_shareChunks.add(nodeId, share.round, share.partition, share.offset, share.total,
                                           message,
                                           [&] {
                                               return m_auditor->awaitsShare(nodeId, share.round) ||
                                                      m_averager->awaitsShare(nodeId, share.round);
                                           }),
                         nodeId, share, m_sessions,
                         [&](const protocol::AverageShare& all, const protocol::TaskMessage& whole) {
                             onShare(nodeId, all, whole);
                         });
    if (!m_auditor->onShare(nodeId, share, message))
        m_averager->onShare(nodeId, share, message);
}

void Trainer::onGradientShare(const QString& nodeId, const protocol::GradientShare& share,
                              const protocol::TaskMessage& message) {
    if (!m_gradients)
        return;
    if (share.total <= 0) {
        m_gradients->onShare(nodeId, share, message);
        return;
    }
    takeChunk(m_gradientChunks.add(nodeId, share.step, share.firstRound ? 1 : 2, share.offset, share.total,
                                   message, [&] { return m_gradients->awaitsShare(nodeId, share.step); }),
              nodeId, share, m_sessions,
              [&](const protocol::GradientShare& all, const protocol::TaskMessage& whole) {
                  m_gradients->onShare(nodeId, all, whole);
              });
}

} // namespace tessera::coordinator
