// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeInbox: every message the coordinator sends this node, text or binary, to the part it is for.
// One std::visit over protocol::ToNodeMessage with one overload per message and no catch-all: a
// message type added there does not compile until it is handled here.
//
//   task (binary), step, average, sync_request, average_result, sync,
//   gradient_result, gradient_basis          → the TaskRunner of the stage loaded
//   task (text: a probe)                     → probeAsked (the engine runs it)
//   reassign                                 → reassigned (the node switches stage)
//   credits                                  → creditsWaiting (the credits poller fetches them)
//   error                                    → a warning in the log
//   heartbeat_ack                            → nothing: the session took it (NodeSession)
//
// Binary messages are decoded here, once: one that does not decode or pass its schema is refused
// (a task whose id reads is answered by it, anything else only counted). Between stages (a reassign:
// no runner) only probes run: the data plane's messages are dropped.

#include "protocol/SessionMessages.h"

#include <QByteArray>
#include <QJsonObject>
#include <QObject>
#include <QPointer>

namespace tessera::protocol {
struct TaskMessage;
}

namespace tessera::node {

class TaskRunner;

class NodeInbox final : public QObject {
    Q_OBJECT

public:
    explicit NodeInbox(QObject* parent = nullptr);
    ~NodeInbox() override;

    // The runner of the stage loaded (null: none, between stages). One destroyed is forgotten.
    void setRunner(TaskRunner* runner);

    // A text message, typed and checked by the session.
    void receive(const protocol::ToNodeMessage& message);
    // A binary message as received (a TaskMessage). Never throws, never crashes on bad bytes.
    void receiveBinary(const QByteArray& bytes);

Q_SIGNALS:
    void probeAsked(const tessera::protocol::Task& task);
    void reassigned(const tessera::protocol::Reassign& message);
    void creditsWaiting();

private:
    struct Delivery; // the visitor: one overload per message

    // `frames`: the binary message the header came in; null for a text message.
    void deliver(const protocol::ToNodeMessage& message, const protocol::TaskMessage* frames);
    void refuseBinary(qsizetype bytes, const QString& error, const QJsonObject& readable);

    QPointer<TaskRunner> m_runner;
};

} // namespace tessera::node
