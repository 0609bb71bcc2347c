// SPDX-License-Identifier: Apache-2.0
#pragma once
// Trainer: the coordinator's training, assembled from its parts and listening to the nodes'
// sessions — TrainingLoop (microbatches into steps), Router (each microbatch through one node per
// stage), Membership (who takes part: ready, ghost, routed, gone; rebalancing), Averager (SPARTA
// rounds and ghost syncs), StageCheckpoints (the stages' weights on disk), CreditGranter (receipts)
// and NodeProbes (a node's speed). Its TrainerInbox hands each typed message to the part it is for;
// it runs their timers, and stops them cleanly.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "coordinator/api/SessionListener.h"
#include "coordinator/router/Router.h"
#include "coordinator/store/TrainingStore.h"
#include "coordinator/training/Averager.h"
#include "coordinator/training/CreditGranter.h"
#include "coordinator/training/GradientAverager.h"
#include "coordinator/training/Membership.h"
#include "coordinator/training/NodeProbes.h"
#include "coordinator/training/PreparedRun.h"
#include "coordinator/training/StageCheckpoints.h"
#include "coordinator/training/TrainingLoop.h"
#include "coordinator/trust/Auditor.h"
#include "coordinator/trust/Bisection.h"
#include "coordinator/trust/Departures.h"
#include "coordinator/trust/Reexecution.h"
#include "coordinator/trust/Reputation.h"
#include "coordinator/trust/ResultCheck.h"
#include "coordinator/trust/ShareCheck.h"
#include "coordinator/trust/WeightCheck.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QTimer>

#include <chrono>
#include <functional>
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
class TrainerInbox;

struct TrainerSettings {
    LoopSettings loop;
    RouterSettings router;
    AveragingSettings averaging;
    GradientSettings gradients;
    MembershipSettings membership;
    ResultCheckSettings checks;
    AuditSettings audits; // its partitions follow averaging's
    ReexecutionSettings reexecution;
    // Of the drawn results of a stage the coordinator can recompute, the share re-executed on another
    // replica instead (so the path every larger stage relies on runs everywhere). Re-execution runs
    // only where replicas hold equal weights (gradient averaging, a ghost sync of AdamW's state, no
    // SPARTA rounds): elsewhere honest replicas differ too (measured 0.05–0.8 per token on tiny).
    double reexecuteWhereAudited = 0.25;
    // Gradient shares checked against their senders' work (trust/ShareCheck), where replicas agree and
    // the exchange is dense; percent 0: not checked.
    ShareCheckSettings shareCheck;
    ReputationSettings reputation;
    std::chrono::milliseconds creditInterval{std::chrono::seconds(60)};
    // Accepted work is pending credit this long at least, and until a later audit of its node passed.
    std::chrono::milliseconds creditEscrow{std::chrono::minutes(10)};
    std::chrono::milliseconds flushInterval{std::chrono::seconds(1)};
};

class Trainer final : public QObject, public SessionListener {
    Q_OBJECT

public:
    // `prepared`: the run's checkpoints and data, as RunPreparation made them ready.
    static Result<std::unique_ptr<Trainer>> create(Database& db, const Identity& key,
                                                   const gpu::ModelConfig& config, const QString& shardDir,
                                                   TrainerSettings settings, SessionApi& sessions,
                                                   PreparedRun prepared);
    ~Trainer() override;

    void sessionOpened(const QString& nodeId) override;
    void sessionReceived(const QString& nodeId, const protocol::ToCoordinatorMessage& message,
                         const protocol::TaskMessage* frames) override;
    void sessionClosed(const QString& nodeId) override;

    // For /v1/status: the loop's numbers, averaging, and each stage's nodes, ghosts and checkpoint.
    QJsonObject status() const;
    QJsonObject reexecutionStatus() const; // status()'s trust.reexecution
    QJsonObject shareCheckStatus() const;  // status()'s trust.shares
    // A clean stop: no new microbatches, what is in flight abandoned, everything written,
    // pending credit granted and changed checkpoints published.
    void stop();

    qint64 step() const { return m_state.step; }
    const Router& router() const { return *m_router; }
    // For /v1/nodes: what the node is doing and how fast it is.
    NodeLive live(const QString& node) const { return m_membership->live(node); }

private:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using SendBinary = std::function<bool(const QString& node, const QByteArray& message)>;
    using Clock = std::function<qint64()>;

    Trainer(Database& db, const gpu::ModelConfig& config, TrainerSettings settings, SessionApi& sessions);
    // create()'s steps, in order: each makes a part and wires it to those made before it.
    static Status checkSettings(const gpu::ModelConfig& config, const TrainerSettings& settings,
                                const PreparedRun& prepared);
    // The training state read back, the data in its order after a restart, the checkpoints taken.
    Status resume(PreparedRun prepared);
    // Result checks, probes, audits, credits and reputation.
    Status makeChecks(const Identity& key);
    void makeAverager();
    void makeLoop();
    Status makeGradients(); // only with gradient averaging on
    void makeRouter();
    Status makeReexecution(); // on the router's checks
    // Share checks, and the gate that holds a step's update while they or a bisection of the stage
    // run (the checkpoint must hold the weights they judge on until then).
    void makeStepChecks();
    void releaseHold(qint64 step, int stage, const QStringList& dropped, bool shares);
    void makeMembership();
    void makeReclaim(const QString& shardDir);
    void wireMembership(); // to the reclaim, the auditor and the averager's syncs
    void makeInbox();
    // The timers started, the router issuing, the sessions heard.
    void start();
    // What the parts are handed: sending to a node's newest session, and the time.
    SendText textSender();
    SendBinary binarySender();
    Clock clock();

    void grantCredits();
    std::optional<Router::Refusal> checkResult(const QString& node, const Microbatch& mb,
                                               protocol::TaskKind kind, const protocol::HeldFrame& output,
                                               std::optional<double> loss);
    void onRefused(const QString& node, int stage, const QString& reason);
    // A strike: probation, a while out of the routing, pending credit forfeited; the third is out.
    void strike(const QString& node, const QString& reason);
    void onAudited(const AuditOutcome& outcome);
    void onReexecuted(const ReexecutionVerdict& verdict);
    void onShareChecked(const ShareVerdict& verdict);
    // A node proven to lie (a failed audit, a re-execution that convicts it): banned, its pending
    // credit forfeited, its session ended.
    void convict(const QString& node, const QString& reason);
    // Draws an accepted result for a check: kept for an audit, or re-executed on another replica.
    void drawForCheck(const QString& node, const Microbatch& mb, protocol::TaskKind kind,
                      const protocol::HeldFrame& output, std::optional<double> loss, bool suspicious);
    qint64 now() const;

    Database& m_db;
    gpu::ModelConfig m_config;
    TrainerSettings m_settings;
    SessionApi& m_sessions;
    TrainingStore m_store;
    TrainingState m_state;
    std::unique_ptr<gpu::TrainingData> m_data;
    std::unique_ptr<StageCheckpoints> m_checkpoints;
    std::unique_ptr<ResultCheck> m_checks;
    std::unique_ptr<Auditor> m_auditor;
    std::unique_ptr<Reputation> m_reputation;
    std::unique_ptr<NodeProbes> m_probes;
    std::unique_ptr<CreditGranter> m_credits;
    std::unique_ptr<Averager> m_averager;
    std::unique_ptr<GradientAverager> m_gradients; // null when gradient averaging is off
    std::unique_ptr<WeightCheck> m_weightCheck;    // null when gradient averaging is off
    std::unique_ptr<TrainingLoop> m_loop;
    std::unique_ptr<Router> m_router;
    std::unique_ptr<Reexecution> m_reexecution;
    std::unique_ptr<ShareCheck> m_shareCheck; // null where shares are not checked
    std::unique_ptr<Bisection> m_bisection;   // null where replicas do not agree
    struct StepHold {
        bool shares = false;    // the share checks of the stage's step are out
        bool bisecting = false; // a bisection of the stage waits for traces
        QStringList dropped;
        qint64 sharesInAtMs = 0; // when the stage's shares were all in: every backward they hold came before
    };
    std::map<std::pair<qint64, int>, StepHold> m_holds; // (step, stage)
    std::unique_ptr<Reclaim> m_reclaim;
    std::unique_ptr<Membership> m_membership;
    std::unique_ptr<TrainerInbox> m_inbox;
    bool m_replicasAgree = false; // see reexecuteWhereAudited
    Departures m_departures; // excused departures while evidence was owed (audits' and bisections')
    QHash<QString, qint64> m_foundFalse; // node → when it was last convicted or struck (ShareCheck's framers)
    bool m_stopped = false;
    QTimer m_flushTimer;
    QTimer m_creditTimer;
    QTimer m_tickTimer;
    QTimer m_balanceTimer;
};

} // namespace tessera::coordinator
