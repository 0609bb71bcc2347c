// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeProbes: a node's first task on every session is a probe — a synthetic microbatch of its
// stage that tells how fast it computes (the router's first estimate of its seconds per token) and
// that its engine works at all. The time is the coordinator's own (sent → answered), never the node's word.
// Probes never touch the weights (the node runs them isolated).

#include "protocol/SessionMessages.h"

#include <QHash>
#include <QString>

#include <functional>
#include <optional>

namespace tessera::coordinator {

class NodeProbes final {
public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;

    // The probe's shape: small enough for any machine, large enough to time.
    static constexpr int kBatch = 2;
    static constexpr int kSeq = 64;

    explicit NodeProbes(SendText sendText)
        : m_sendText(std::move(sendText)) {}

    // Sends the node a probe (on every session it opens).
    void start(const QString& node);
    // A probe's result; false when it is not one this node was sent.
    bool onResult(const QString& node, const protocol::TaskResult& result);
    // Seconds per token from the node's last probe; none until it answered one.
    std::optional<double> secondsPerToken(const QString& node) const;
    void forget(const QString& node);

private:
    SendText m_sendText;
    struct Pending {
        qint64 taskId = 0;
        qint64 sentAtMs = 0;
    };
    QHash<QString, Pending> m_pending; // node → its probe
    QHash<QString, double> m_speed;    // node → seconds per token
    qint64 m_nextTaskId = 1;
};

} // namespace tessera::coordinator
