// SPDX-License-Identifier: Apache-2.0
#pragma once
// SessionListener: what the data plane (Trainer) hears from the nodes' sessions — a session opening,
// every message a node sends it (typed and checked, binary ones decoded once), and a node's last
// session closing.

#include "protocol/SessionMessages.h"

#include <QString>

namespace tessera::protocol {
struct TaskMessage;
}

namespace tessera::coordinator {

class SessionListener {
public:
    virtual ~SessionListener() = default;
    // The node's session is open (its first, or a reconnect).
    virtual void sessionOpened(const QString& nodeId) = 0;
    // A message the node may send, other than a heartbeat (SessionApi answers those), checked
    // against its schema. `frames`: the binary message it came in, decoded (its frames are views into
    // its bytes); null for a text message.
    virtual void sessionReceived(const QString& nodeId, const protocol::ToCoordinatorMessage& message,
                                 const protocol::TaskMessage* frames) = 0;
    // The node has no session left.
    virtual void sessionClosed(const QString& nodeId) = 0;
};

} // namespace tessera::coordinator
