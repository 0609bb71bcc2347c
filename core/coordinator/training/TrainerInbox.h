// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrainerInbox: every message a node sends the coordinator's training, text or binary, to the part
// it is for. One std::visit over protocol::ToCoordinatorMessage with one overload per message and no
// catch-all: a message type added there does not compile until it is handled here.
//
//   ready                          → Membership (ghost, routed, or held by a restart's Reclaim)
//   unavailable                    → Membership; the Auditor and the GradientAverager forget the node
//   task_result (binary)           → the Router (checked, then on to the next stage)
//   task_result (text: a probe's)  → NodeProbes; one of a data-plane task is refused in words
//   average_share (binary)         → a restart's Reclaim, else the Auditor, else the Averager
//   sync_done                      → the Averager (a ghost took a chunk of the weights)
//   gradient_share (binary)        → the GradientAverager (none when gradient averaging is off)
//   heartbeat, step_done           → nothing: SessionApi answers heartbeats; the node's status shows
//                                    its steps
//
// A share that travels in chunks (protocol/PartitionChunks) is put together first (ShareChunks) —
// except a reclaim's, which Reclaim writes to disk chunk by chunk. SessionApi has checked each
// message against its schema, and decoded a binary one, before it comes here.

#include "base/ModelConfig.h"
#include "coordinator/training/ShareChunks.h"
#include "protocol/SessionMessages.h"

#include <QString>

namespace tessera::protocol {
struct TaskMessage;
}

namespace tessera::coordinator {

class Auditor;
class Averager;
class GradientAverager;
class Membership;
class NodeProbes;
class Reclaim;
class Router;
class SessionApi;
class WeightCheck;

class TrainerInbox final {
public:
    // Where messages go: the Trainer's parts, which outlive the inbox (not owned).
    struct Parts {
        SessionApi& sessions; // answers a message refused
        Membership& membership;
        NodeProbes& probes;
        Router& router;
        Averager& averager;
        Auditor& auditor;
        Reclaim& reclaim;
        GradientAverager* gradients; // null when gradient averaging is off
        WeightCheck* weights;        // null when gradient averaging is off
    };

    TrainerInbox(const gpu::ModelConfig& config, Parts parts);

    // A message of `node`; `frames`: the binary message it came in, null for a text message.
    void receive(const QString& node, const protocol::ToCoordinatorMessage& message,
                 const protocol::TaskMessage* frames);
    // The node has no session left: the chunks it sent of a share are dropped.
    void nodeGone(const QString& node);
    qint64 shareChunks() const { return m_shareChunks.received(); } // average_share chunks taken
    qint64 gradientChunks() const { return m_gradientChunks.received(); }

private:
    struct Delivery; // the visitor: one overload per message

    // An average_share, or a chunk of one (put together first: PartitionChunks), to whoever asked.
    void onShare(const QString& node, const protocol::AverageShare& share,
                 const protocol::TaskMessage& message);
    void onGradientShare(const QString& node, const protocol::GradientShare& share,
                         const protocol::TaskMessage& message);

    Parts m_parts;
    ShareChunks m_shareChunks;    // average_share chunks
    ShareChunks m_gradientChunks; // gradient_share chunks
};

} // namespace tessera::coordinator
