// SPDX-License-Identifier: Apache-2.0
// TrainerInbox: each node message to the training part it is for; shares put together from their
// chunks first.
#include "coordinator/training/TrainerInbox.h"

#include "coordinator/api/SessionApi.h"
#include "coordinator/router/Router.h"
#include "coordinator/training/Averager.h"
#include "coordinator/training/GradientAverager.h"
#include "coordinator/training/Membership.h"
#include "coordinator/training/NodeProbes.h"
#include "coordinator/training/Reclaim.h"
#include "coordinator/trust/Auditor.h"
#include "coordinator/trust/WeightCheck.h"
#include "protocol/TaskMessage.h"

#include <variant>

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

struct TrainerInbox::Delivery {
    TrainerInbox& inbox;
    const QString& node;
    const protocol::TaskMessage* frames; // null: a text message

    void operator()(const protocol::Heartbeat&) const {} // SessionApi answers it; none comes here
    void operator()(const protocol::Ready& ready) const { inbox.m_parts.membership.onReady(node, ready); }
    void operator()(const protocol::Unavailable& unavailable) const {
        inbox.m_parts.auditor.nodeLeft(node); // paused: the weights it owes are not coming
        if (inbox.m_parts.gradients)
            inbox.m_parts.gradients->nodeGone(node);
        inbox.m_parts.membership.onUnavailable(node, unavailable.reason);
    }
    void operator()(const protocol::TaskResult& result) const {
        if (frames != nullptr)
            return inbox.m_parts.router.onResult(node, result, *frames);
        // Text results are probes'; the data plane's come binary, with their frames.
        if (!inbox.m_parts.probes.onResult(node, result))
            inbox.m_parts.sessions.sendText(
                node, protocol::ErrorNotice{QStringLiteral(
                          "a task_result of a data-plane task must come as a binary message")});
    }
    // The weights it shows after the step are judged; a step the node could not apply leaves its
    // weights unlike its replicas': it syncs again.
    void operator()(const protocol::StepDone& done) const {
        if (inbox.m_parts.weights)
            inbox.m_parts.weights->onStepDone(node, done);
        if (!done.ok)
            inbox.m_parts.membership.resync(node, done.error);
    }
    // Shares are binary only: the schema refuses one sent as text.
    void operator()(const protocol::AverageShare& share) const {
        if (frames != nullptr)
            inbox.onShare(node, share, *frames);
    }
    void operator()(const protocol::SyncDone& done) const { inbox.m_parts.averager.onSyncDone(node, done); }
    void operator()(const protocol::GradientShare& share) const {
        if (frames != nullptr)
            inbox.onGradientShare(node, share, *frames);
    }
};

TrainerInbox::TrainerInbox(const gpu::ModelConfig& config, Parts parts)
    : m_parts(parts)
    , m_shareChunks(config)
    , m_gradientChunks(config) {}

void TrainerInbox::receive(const QString& node, const protocol::ToCoordinatorMessage& message,
                           const protocol::TaskMessage* frames) {
    std::visit(Delivery{*this, node, frames}, message);
}

void TrainerInbox::nodeGone(const QString& node) {
    m_shareChunks.nodeGone(node);
    m_gradientChunks.nodeGone(node);
}

void TrainerInbox::onShare(const QString& node, const protocol::AverageShare& share,
                           const protocol::TaskMessage& message) {
    if (m_parts.reclaim.onShare(node, share, message)) // a reclaim writes the chunks as they come
        return;
    if (share.total > 0) // a chunk: read once the share is whole
        return takeChunk(m_shareChunks.add(node, share.round, share.partition, share.offset, share.total,
                                           message,
                                           [&] {
                                               return m_parts.auditor.awaitsShare(node, share.round) ||
                                                      m_parts.averager.awaitsShare(node, share.round);
                                           }),
                         node, share, m_parts.sessions,
                         [&](const protocol::AverageShare& all, const protocol::TaskMessage& whole) {
                             onShare(node, all, whole);
                         });
    if (!m_parts.auditor.onShare(node, share, message))
        m_parts.averager.onShare(node, share, message);
}

void TrainerInbox::onGradientShare(const QString& node, const protocol::GradientShare& share,
                                   const protocol::TaskMessage& message) {
    if (m_parts.gradients == nullptr)
        return;
    if (share.total <= 0) {
        m_parts.gradients->onShare(node, share, message);
        return;
    }
    takeChunk(m_gradientChunks.add(node, share.step, share.firstRound ? 1 : 2, share.offset, share.total,
                                   message, [&] { return m_parts.gradients->awaitsShare(node, share.step); }),
              node, share, m_parts.sessions,
              [&](const protocol::GradientShare& all, const protocol::TaskMessage& whole) {
                  m_parts.gradients->onShare(node, all, whole);
              });
}

} // namespace tessera::coordinator
