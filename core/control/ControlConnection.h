// SPDX-License-Identifier: Apache-2.0
#pragma once
// ControlConnection: asynchronous requests to the node on a data directory over its control
// socket (the desktop app's side; ControlClient is the CLI's blocking one). One request at a time
// per connection; each answer or failure arrives through the callback on the owner's thread.

#include "base/Result.h"
#include "protocol/ControlMessages.h"

#include <QJsonObject>
#include <QObject>
#include <QString>

#include <deque>
#include <functional>
#include <memory>

class QLocalSocket;
class QTimer;

namespace tessera::node {

class ControlConnection final : public QObject {
    Q_OBJECT

public:
    using Callback = std::function<void(Result<QJsonObject>)>;

    explicit ControlConnection(QString dataDir, QObject* parent = nullptr);
    ~ControlConnection() override;

    // Queues the request; connects (reading the token afresh: each node start writes a new one)
    // when not connected. The callback gets the reply ("ok" true) or the error: the node's
    // refusal, "no tessera-node is running on DIR", or "did not answer in time" after timeoutMs.
    void request(const protocol::ControlRequest& request, Callback callback, int timeoutMs = 5000);
    // Fails whatever is queued ("cancelled") and disconnects.
    void reset();
    bool busy() const { return !m_queue.empty(); }

private:
    struct Pending;
    void sendNext();
    void dropSocket();
    void onReadyRead();
    void finish(Result<QJsonObject> result);

    QString m_dataDir;
    std::unique_ptr<QLocalSocket> m_socket;
    QTimer* m_timeout = nullptr;
    QByteArray m_buffer;
    std::deque<std::shared_ptr<Pending>> m_queue;
    bool m_sent = false;
};

} // namespace tessera::node
