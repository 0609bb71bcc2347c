#pragma once
// SessionListener: what the data plane (Trainer) hears from the nodes' sessions — control
// messages, binary task results and averaging shares, and a node's last session closing.

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace tessera::coordinator {

class SessionListener {
public:
    virtual ~SessionListener() = default;
    // A text message of a data-plane type ("ready", "unavailable", "step_done", "sync_done").
    virtual void sessionText(const QString& nodeId, const QJsonObject& message) = 0;
    // A binary message (a TaskMessage, not yet decoded).
    virtual void sessionBinary(const QString& nodeId, const QByteArray& message) = 0;
    // The node has no session left.
    virtual void sessionClosed(const QString& nodeId) = 0;
};

} // namespace tessera::coordinator
