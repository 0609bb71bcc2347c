// SPDX-License-Identifier: Apache-2.0
#pragma once
// EngineHost: the node's engine thread as the node sees it — stage loads in the order asked (the
// answer of a load that a later one replaced, or that was for a stage the node has left, is
// dropped), whether a stage is loaded, whether compute has paused, and the compute statistics.
// The data plane's TaskRunner submits to worker() directly; probes (synthetic microbatches that
// measure how fast this stage runs here, never touching the weights) go in and out here.

#include "node/engine/EngineTask.h"
#include "protocol/SessionMessages.h"

#include <QObject>
#include <QString>

#include <memory>

namespace tessera::node {

class EngineThread;
class EngineWorker;

class EngineHost final : public QObject {
    Q_OBJECT

public:
    explicit EngineHost(double limit, QObject* parent = nullptr);
    ~EngineHost() override;

    EngineWorker* worker() const;
    // Loads a stage; any load asked before is void from now on.
    void load(const EngineLoadOptions& options);
    // Every load asked so far is void (the node left that stage).
    void voidLoads();
    bool loaded() const { return m_loaded; }
    bool paused() const { return m_paused; } // compute has stopped (a requested pause took effect)
    const EngineStats& stats() const { return m_stats; }
    // Runs the coordinator's probe; probeAnswered carries the result to send back.
    void probe(const protocol::Task& task);

Q_SIGNALS:
    // The latest load finished: error empty on success.
    void stageLoaded(const QString& error, qint64 parameters);
    void pausedChanged(bool paused);
    void probeAnswered(const tessera::protocol::TaskResult& result);

private:
    std::unique_ptr<EngineThread> m_thread;
    // Loads are answered in the order asked; those asked up to m_voidThrough were for a stage the
    // node has left, and one superseded by a later request is void too.
    qint64 m_requested = 0;
    qint64 m_answered = 0;
    qint64 m_voidThrough = 0;
    bool m_loaded = false;
    bool m_paused = false;
    EngineStats m_stats;
};

} // namespace tessera::node
