#pragma once
// Node: one volunteer node's lifecycle (see NodeState.h) — benchmark, admission, shard download,
// joining the swarm, working and pausing, and switching stage when the coordinator says
// `reassign` (Working/Paused → Downloading → Joining → Working, the session kept open) — driven
// by the coordinator's answers and by local commands from the control socket. Everything runs on
// the thread that owns the Node, except the benchmark (a short-lived thread) and the engine (its
// own thread).

#include "Result.h"
#include "common/Identity.h"
#include "node/Backoff.h"
#include "node/NodeFiles.h"
#include "node/NodeOptions.h"
#include "node/NodeState.h"
#include "shard/ShardManifest.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QTimer>

#include <memory>
#include <optional>

namespace tessera::node {

class ControlServer;
class CoordinatorClient;
class EngineThread;
class LocalLedger;
class NodeSession;
class ShardDownload;
class ShardStore;
class TaskRunner;
struct EngineResult;
struct EngineStats;
struct HttpReply;

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
    void retryLater(const QString& why, NodeState from);

    void runBenchmark();
    void fetchInfo();
    bool checkCoordinatorKey(const QString& presented);
    void admit();
    void onAdmission(const HttpReply& reply);
    void fetchManifest();
    void useManifest(const QByteArray& manifestJson);
    void download();
    void join();
    void maybeWorking();
    void onSessionMessage(const QJsonObject& message);
    // The coordinator moves this node to another stage: drop the old stage's work, fetch and
    // load the new one's shard on the open session, then say ready for it.
    void onReassign(const QJsonObject& message);
    void onTaskFinished(const EngineResult& result);
    // Tells the coordinator whether to route tasks here: ready, or unavailable while paused.
    void announceAvailability();
    void pollCredits();

    QJsonObject onControl(const QString& command, const QJsonObject& arguments);
    void setPaused(bool paused);
    void hardPause();

    NodeOptions m_options;
    NodeFiles m_files;
    NodeState m_state = NodeState::Starting;
    QString m_stateDetail;
    QString m_lastError;
    std::optional<Identity> m_identity;
    QByteArray m_coordinatorKey; // raw 32 bytes, pinned
    QJsonObject m_hardware;
    QJsonObject m_bench;
    QElapsedTimer m_benchClock; // since the benchmark began (the first run shows its progress)
    QJsonObject m_modelConfig; // from /v1/info
    int m_stageCount = 0;      // from /v1/info; 0 while unknown
    QString m_sessionToken;
    int m_stage = -1;
    std::optional<gpu::ShardManifest> m_manifest;
    qint64 m_retryAtMs = 0;

    std::unique_ptr<ControlServer> m_control;
    std::unique_ptr<CoordinatorClient> m_client;
    std::unique_ptr<ShardStore> m_store;
    std::unique_ptr<ShardDownload> m_download;
    std::unique_ptr<LocalLedger> m_ledger;
    std::unique_ptr<NodeSession> m_session;
    std::unique_ptr<EngineThread> m_engine;
    std::unique_ptr<TaskRunner> m_runner; // the data plane, for the stage loaded
    bool m_engineLoaded = false;
    // Loads are answered in the order asked; those asked up to m_loadsVoidThrough were for a
    // stage this node has left, and one superseded by a later request is void too.
    qint64 m_loadsRequested = 0;
    qint64 m_loadsAnswered = 0;
    qint64 m_loadsVoidThrough = 0;

    bool m_pauseRequested = false;
    bool m_enginePaused = false;
    double m_limit = 0.7;
    double m_computeShare = 0;
    double m_computeShareTotal = 0; // since the first task
    qint64 m_tasksDone = 0;

    Backoff m_backoff;
    QTimer m_retry;
    QTimer m_creditsTimer;
    bool m_stopping = false;
    int m_exitCode = ExitStopped;
};

} // namespace tessera::node
