// SPDX-License-Identifier: Apache-2.0
#pragma once
// Node: one volunteer node's lifecycle (see NodeState.h) — benchmark, admission, shard download,
// joining the swarm, working and pausing, and switching stage when the coordinator says
// `reassign` (Working/Paused → Downloading → Joining → Working, the session kept open) — driven
// by the coordinator's answers and by local commands from the control socket. It assembles named
// parts — BenchmarkRun, Admission, ShardInstall, EngineHost, NodeSession, NodeInbox, TaskRunner,
// CreditsPoller — and owns the state machine between them. Everything runs on the thread that owns
// the Node, except the benchmark (a short-lived thread) and the engine (its own thread).
//
// The compute limit belongs to whoever launches the node (the desktop app keeps it in its
// settings): --gpu-limit at start, then the control socket's set-limit. The node does not store it.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/ShardManifest.h"
#include "common/Backoff.h"
#include "common/Identity.h"
#include "model/MemoryPlan.h"
#include "node/NodeFiles.h"
#include "node/NodeOptions.h"
#include "node/NodeState.h"
#include "protocol/ControlMessages.h"
#include "protocol/SessionMessages.h"

#include <QJsonObject>
#include <QObject>
#include <QTimer>

#include <memory>
#include <optional>

namespace tessera::node {

class Admission;
class BenchmarkRun;
class ControlServer;
class CreditsPoller;
class CoordinatorClient;
class EngineHost;
class LocalLedger;
class NodeInbox;
class NodeSession;
class ShardInstall;
class ShardStore;
class TaskRunner;

// Process exit codes of `tessera-node run`.
enum NodeExit : int { ExitStopped = 0, ExitError = 1, ExitUsage = 2, ExitRefused = 3 };

class Node final : public QObject {
    Q_OBJECT

public:
    explicit Node(NodeOptions options, QObject* parent = nullptr);
    ~Node() override;

    // Opens the data dir, identity and control socket, then starts the lifecycle. An error here
    // (another node on this data dir, an unreadable key) means nothing was started.
    Status start();
    // Stops cleanly (session closed, engine stopped, ledger closed); finished() follows.
    void stop(const QString& why);

    NodeState state() const { return m_state; }
    QJsonObject status() const;

Q_SIGNALS:
    void stateChanged(tessera::node::NodeState state);
    // The process may exit with this code.
    void finished(int exitCode);

private:
    void enter(NodeState next, const QString& detail = {});
    void fail(const QString& message, int exitCode);
    // Exits refused for good (ExitRefused), with the kind recorded for the desktop app.
    void refuse(protocol::RefusalKind kind, const QString& message);
    void retryLater(const QString& why, NodeState from);

    void waitlisted(qint64 retryAfterSeconds, const QString& reason);

    void runBenchmark();
    void download();
    // Joining: the ledger and engine (once), the session and its inbox (once), a runner for the
    // stage, its load, and the session opened.
    void join();
    bool openLedger(); // false: failed (the node stops)
    void makeEngine();
    void makeSession();
    void makeRunner(const gpu::ModelConfig& config);
    void loadStage(const gpu::ModelConfig& config);
    void maybeWorking();
    // The coordinator moves this node to another stage: drop the old stage's work, fetch and
    // load the new one's shard on the open session, then say ready for it.
    void onReassign(const protocol::Reassign& message);
    // Tells the coordinator whether to route tasks here: ready, or unavailable while paused.
    void announceAvailability();

    // The control socket's commands; `status` answers with status().
    QJsonObject onControl(const protocol::ControlRequest& request);
    void setPaused(bool paused);
    void hardPause();

    NodeOptions m_options;
    NodeFiles m_files;
    NodeState m_state = NodeState::Starting;
    QString m_stateDetail;
    QString m_lastError;
    std::optional<Identity> m_identity;
    std::optional<gpu::ShardManifest> m_manifest;
    gpu::MemoryPlan m_plan; // how the stage given is laid out (StagePlan)
    qint64 m_retryAtMs = 0;

    std::unique_ptr<ControlServer> m_control;
    std::unique_ptr<CoordinatorClient> m_client;
    std::unique_ptr<BenchmarkRun> m_benchmark;
    std::unique_ptr<Admission> m_admission;
    std::unique_ptr<CreditsPoller> m_credits;
    std::unique_ptr<ShardStore> m_store;
    std::unique_ptr<ShardInstall> m_install;
    std::unique_ptr<LocalLedger> m_ledger;
    std::unique_ptr<NodeSession> m_session;
    std::unique_ptr<NodeInbox> m_inbox; // the session's messages to their parts
    std::unique_ptr<EngineHost> m_engine;
    std::unique_ptr<TaskRunner> m_runner; // the data plane, for the stage loaded; sends on m_session
    bool m_pauseRequested = false;
    double m_limit = 0.7; // what the engine runs at (SetLimit keeps the worker in step)

    Backoff m_backoff;
    QTimer m_retry;
    QTimer m_creditsTimer;
    bool m_stopping = false;
    int m_exitCode = ExitStopped;
};

} // namespace tessera::node
