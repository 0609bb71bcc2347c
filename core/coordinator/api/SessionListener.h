// SPDX-License-Identifier: Apache-2.0
#pragma once
// SessionListener: what the data plane (Trainer) hears from the nodes' sessions — a session opening,
// typed control messages, binary task results and averaging shares, and a node's last session
// closing.

#include "protocol/SessionMessages.h"

#include <QByteArray>
#include <QString>

namespace tessera::coordinator {

class SessionListener {
public:
    virtual ~SessionListener() = default;
    // The node's session is open (its first, or a reconnect).
    virtual void sessionOpened(const QString& nodeId) = 0;
    // A text message the node may send, other than a heartbeat (checked against its schema).
    virtual void sessionMessage(const QString& nodeId, const protocol::SessionMessage& message) = 0;
    // A binary message (a TaskMessage, not yet decoded: the listener decodes it once and keeps views).
    virtual void sessionBinary(const QString& nodeId, const QByteArray& message) = 0;
    // The node has no session left.
    virtual void sessionClosed(const QString& nodeId) = 0;
};

} // namespace tessera::coordinator
