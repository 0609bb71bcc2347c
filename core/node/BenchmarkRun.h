// SPDX-License-Identifier: Apache-2.0
#pragma once
// BenchmarkRun: the node's first step — the throughput it will claim at admission, measured on a
// short-lived thread (or taken from the cache when the hardware has not changed) while the event
// loop stays free, and what `tessera-node status` shows of it: its progress, then its result.

#include "common/Mailbox.h"
#include "node/BenchmarkCache.h"
#include "node/NodeFiles.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>

#include <memory>
#include <mutex>

namespace tessera::node {

class BenchmarkRun final : public QObject {
    Q_OBJECT

public:
    BenchmarkRun(NodeFiles files, QString device, double seconds, QObject* parent = nullptr);
    ~BenchmarkRun() override;

    void start();
    // After this, nothing is signalled.
    void stop() { m_stopped = true; }

    // {budget_s, elapsed_s[, device, name, tflops, dtype]}
    QJsonObject status() const;

Q_SIGNALS:
    void finished(const tessera::node::HardwareClaims& claims);
    void failed(const QString& error);

private:
    NodeFiles m_files;
    QString m_device;
    double m_seconds;
    QElapsedTimer m_clock; // since the benchmark began
    HardwareClaims m_claims;
    bool m_done = false;
    bool m_stopped = false;
    // The measuring thread's way back (common/Mailbox.h): cut when this object goes first.
    struct Link {
        std::mutex mutex;
        Mailbox* replies = nullptr; // under mutex
    };
    Mailbox m_replies{this};
    std::shared_ptr<Link> m_link;
};

} // namespace tessera::node
