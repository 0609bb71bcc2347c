// SPDX-License-Identifier: Apache-2.0
#pragma once
// SessionSender: where the node's messages to the coordinator go — the session (NodeSession) in the
// node, a recorder in the tests. Both send at once, before they return: a binary message may be a
// view of an engine buffer about to be reused.

#include "protocol/SessionMessages.h"

#include <QByteArray>

namespace tessera::node {

class SessionSender {
public:
    virtual ~SessionSender() = default;

    // A text message; dropped while the session is closed.
    virtual void send(const protocol::SessionMessage& message) = 0;
    // A binary message (a TaskMessage: a task's result, an averaging share); dropped while closed.
    virtual void sendBinary(const QByteArray& message) = 0;
};

} // namespace tessera::node
