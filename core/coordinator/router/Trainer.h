#pragma once
// Trainer: the coordinator's training loop — feeds microbatches to the Router, counts a global
// batch per step and sends `step k` to every node, starts SPARTA rounds (Averager) every
// `interval` steps, keeps the stage checkpoints fresh and publishes them, turns accepted work
// into credit receipts, and keeps it all in SQL (TrainingStore) so a restart resumes the step.
//
// A node's life in the data plane: session open → (probe) → "ready" → Ghost (a live replica's
// weights are synced to it; not routed to) → Routed (gets tasks; takes part in averaging) →
// gone ("unavailable" on a pause, or its session closed): its work in flight goes elsewhere.

#include "Result.h"
#include "coordinator/TrainingStore.h"
#include "coordinator/api/SessionListener.h"
#include "coordinator/router/Averager.h"
#include "coordinator/router/Router.h"
#include "model/ModelConfig.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QTimer>

#include <chrono>
#include <deque>
#include <memory>

namespace tessera {
class Identity;
}
namespace tessera::gpu {
class TrainingData;
}

namespace tessera::coordinator {

class Database;
class SessionApi;
class StageCheckpoints;

struct TrainerSettings {
    int batch = 8;               // sequences per microbatch
    int seq = 64;                // tokens per sequence
    int microbatchesPerStep = 8; // the global batch
    RouterSettings router;
    AveragingSettings averaging;
    int checkpointEvery = 50; // steps between published checkpoints
    std::chrono::milliseconds creditInterval{std::chrono::seconds(60)};
    std::chrono::milliseconds flushInterval{std::chrono::seconds(1)};
    qint64 maxSteps = 0;   // stop issuing after this step (0: never)
    bool ghostSync = true; // a joining node first takes a live replica's weights
    // Off (the default): a step's microbatches all start after the previous step's update, so
    // every gradient is computed with the weights it is applied to — the swarm learns exactly as
    // the simulator does, with a pipeline bubble at each step. On: the window runs across step
    // boundaries (no bubble, stale gradients: see ARCHITECTURE).
    bool overlapSteps = false;
    // A stage without a routed node for this long takes one from the stage with the most (≥ 2).
    qint64 rebalanceAfterMs = 15'000;
};

class Trainer final : public QObject, public SessionListener {
    Q_OBJECT

public:
    static Result<std::unique_ptr<Trainer>> create(Database& db, const Identity& key,
                                                   const gpu::ModelConfig& config, const QString& dataset,
                                                   const QString& shardDir, TrainerSettings settings,
                                                   SessionApi& sessions);
    ~Trainer() override;

    void sessionText(const QString& nodeId, const QJsonObject& message) override;
    void sessionBinary(const QString& nodeId, const QByteArray& message) override;
    void sessionClosed(const QString& nodeId) override;

    // For /v1/status: step, loss, tokens, tokens_per_second, microbatches, credits, stages, loss curve.
    QJsonObject status() const;
    // A clean stop: no new microbatches, what is in flight abandoned, everything written,
    // pending credit granted and changed checkpoints published.
    void stop();

    qint64 step() const { return m_state.step; }
    const Router& router() const { return *m_router; }

private:
    Trainer(Database& db, const Identity& key, const gpu::ModelConfig& config, TrainerSettings settings,
            SessionApi& sessions);
    std::optional<MicrobatchInput> feed();
    void onCompleted(const Microbatch& mb);
    void onAbandoned(const Microbatch& mb);
    void endStep();
    void route(const QString& nodeId, int stage);
    void flush();
    void grantCredits();
    void publishCheckpoints();
    // Moves a node to a stage that has had none for rebalanceAfterMs, from the fullest stage.
    void rebalance();
    qint64 now() const;

    Database& m_db;
    const Identity& m_key;
    gpu::ModelConfig m_config;
    TrainerSettings m_settings;
    SessionApi& m_sessions;
    TrainingStore m_store;
    TrainingState m_state;
    std::unique_ptr<gpu::TrainingData> m_data;
    std::unique_ptr<StageCheckpoints> m_checkpoints;
    std::unique_ptr<Router> m_router;
    std::unique_ptr<Averager> m_averager;
    QHash<QString, int> m_ghosts; // syncing, by node → stage
    struct Move {
        int stage = 0;
        qint64 sinceMs = 0;
    };
    // Asked to switch, until it is ready on the new stage (or kReassignGraceMs passed: a node
    // that was paused meanwhile no longer keeps the stage looking held).
    QHash<QString, Move> m_reassigned;
    QHash<int, qint64> m_starvedSince; // stage → when it last had no node
    // Nodes online just before this process started: their first `ready` is a reconnection
    // after a coordinator restart, not a join.
    QSet<QString> m_rejoining;
    qint64 m_savedJoins = 0, m_savedLeaves = 0;
    int m_stepCompleted = 0; // microbatches completed toward the current step
    double m_stepLossSum = 0;
    int m_stepLossCount = 0;
    double m_lastLoss = std::numeric_limits<double>::quiet_NaN();
    std::deque<std::pair<qint64, qint64>> m_recent; // (ms, tokens) of recent completions
    std::deque<LossPoint> m_lossCurve;
    qint64 m_creditedFlop = 0; // accepted FLOPs, this run (resume() gives the start)
    qint64 m_receiptsFlop = 0;
    bool m_stopped = false;
    QTimer m_flushTimer;
    QTimer m_creditTimer;
    QTimer m_tickTimer;
    QTimer m_balanceTimer;
};

} // namespace tessera::coordinator
