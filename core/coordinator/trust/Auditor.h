// SPDX-License-Identifier: Apache-2.0
#pragma once
// Auditor: known-answer audits a node cannot tell from its other tasks, against its own weights.
//
// A sampled share of every node's accepted results (ResultCheck decides which) is kept as
// evidence, with the version of the node's weights it ran on (Router::weightsVersion: it changes
// with each step and each averaging result sent to the node). When a step ends — the node has
// answered every task of the step and `step` has not yet moved its weights — each node holding
// evidence of its current version is asked for those weights with a sync_request: a message every
// replica also gets when a ghost syncs from it, that arrives after the answers it audits, which
// can no longer change. The coordinator loads the weights into its own CPU engine of the stage
// and recomputes every kept task: the node's answer must match within `tolerance` (relative error
// ‖answer − recomputed‖ / ‖recomputed‖; the same weights on another machine differ by rounding
// only — measured in BENCHMARKS.md, "Trust"), and the last stage's loss within `lossTolerance`.
// Evidence of an older version is dropped unaudited. Weights that no computation of the node's
// answers explains cannot be sent back: whatever weights it sends, its answers must be theirs.
//
// Where replicas hold equal weights (gradient averaging, docs/ARCHITECTURE.md "Replicas that agree")
// the checkpoint holds them too, at the moment the snapshot is asked for: setReference gives the
// auditor the stage's weights from it, read then. The node's snapshot must then equal them (up to
// `referenceTolerance`: rounding on other hardware) — a node cannot be audited on weights it does
// not train with (zeros, say, that make every block the identity) — and its answers are recomputed
// with the checkpoint's. Without a reference (replicas that drift) the node's own weights are used.
//
// A snapshot asked for must come: one not sent within its deadline is a failed audit, and a node
// that leaves or pauses while it owes one is struck (Trainer). Either way its answers are still
// judged where the reference holds the weights they ran on. (The request itself cannot pass for
// routine traffic where replicas agree — no SPARTA round asks for weights then — so what it asks
// must not be dodgeable: the answers it covers were given before it, the weights must be the
// reference's, and silence costs what failing does.)
//
// What it does not judge: a stage 0 backward (it answers nothing), stages above maxParameters (not
// recomputed here: the limit is the coordinator's memory and CPU time).
//
// Its state lives on the coordinator's thread; the recomputation runs on its own thread
// (AuditWorker), and `audited` comes back on the coordinator's thread when it is done.

#include "base/ModelConfig.h"
#include "common/Mailbox.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QHash>
#include <QObject>
#include <QString>
#include <QThread>

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::coordinator {

class AuditWorker;

struct AuditSettings {
    double tolerance = 0.05;
    double lossTolerance = 0.02; // absolute, in nats
    int maxEvidencePerNode = 8;
    // A node's weights are asked for at most once in this many steps (a snapshot costs the node a
    // gather of all its weights before its step, and the coordinator a load and recomputation).
    int stepsBetweenSnapshots = 4;
    // A snapshot not sent by then is an audit failed: this long, plus the stage's weights (4 bytes each)
    // at the slowest uplink a volunteer is expected to have (10 Mbit/s: 200 M parameters take 11 min).
    qint64 snapshotDeadlineMs = 60'000;
    double slowestUplinkBytesPerSecond = 1.25e6;
    qint64 maxParameters = 200'000'000; // larger stages are not recomputed on the coordinator
    int partitions = 20;                // the order the weights travel in (the run's averaging partitions)
    qint64 chunkValues = 0;             // values a message of a snapshot carries (0: the default)
    double referenceTolerance = 1e-4;   // ‖snapshot − reference‖ / ‖reference‖ a node's weights may differ by
};

// One accepted result kept for an audit: the task's frames (views of the messages that brought
// them, shared, not copied) and its answer.
struct Evidence {
    qint64 version = 0;
    int stage = 0;
    protocol::TaskKind kind = protocol::TaskKind::Forward;
    qint64 microbatch = 0;
    protocol::HeldFrame input;
    protocol::HeldFrame targets;
    protocol::HeldFrame gradientIn;
    protocol::HeldFrame output;
    std::optional<double> loss;
};

struct AuditOutcome {
    QString node;
    int stage = 0;
    bool passed = false;
    int tasks = 0;               // recomputed and compared with what the node returned
    double worstError = 0;       // the largest relative error among them
    QString reason;              // why it failed
    qint64 requestedAtMs = 0;    // when its weights were asked for: the work it covers was accepted before
    bool judgedForward = false;  // it compared a forward result (covers the node's forwards)
    bool judgedBackward = false; // a backward or forward_backward one's gradient (covers its gradients)
    // Its weights never came: by the deadline (a failed audit), or it left or paused first (`left`:
    // a strike). Its answers were judged on the reference where there is one: a lie found there is
    // an ordinary failed audit instead (passed false, unanswered false).
    bool unanswered = false;
    bool left = false;
};

class Auditor final : public QObject {
    Q_OBJECT

public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using Clock = std::function<qint64()>;
    using VersionOf = std::function<qint64(const QString& node)>;
    // The stage's weights as its replicas hold them now, in a snapshot's order; null when unknown.
    using Reference = std::function<std::shared_ptr<const std::vector<float>>(int stage)>;

    Auditor(const gpu::ModelConfig& config, AuditSettings settings, SendText sendText, Clock clock,
            QObject* parent = nullptr);
    ~Auditor() override;

    const AuditSettings& settings() const { return m_settings; }
    void setReference(Reference reference) { m_reference = std::move(reference); }
    // Whether tasks of this stage can be audited here (its size is within maxParameters).
    bool audits(int stage, qint64 parameters) const {
        return parameters <= m_settings.maxParameters && stage >= 0;
    }

    // Evidence for the node's next snapshot. Suspicious evidence (ResultCheck's statistics) is kept
    // whatever the throttle, and brings the node's snapshot forward to this step's end.
    void keep(const QString& node, Evidence evidence, bool suspicious = false);
    // At a step's end, before `step` is sent: snapshots of the nodes holding current evidence.
    void requestSnapshots(const VersionOf& versionOf);
    bool awaitsShare(const QString& node, qint64 round) const {
        const auto it = m_nodes.constFind(node);
        return round != 0 && it != m_nodes.cend() && it->round == round;
    }
    // A node's average_share; false when it is not a snapshot this auditor asked for.
    bool onShare(const QString& node, const protocol::AverageShare& share,
                 const protocol::TaskMessage& message);
    // The node moved to another stage, or the coordinator is stopping: its evidence and any snapshot
    // it owed are dropped (unjudged).
    void nodeGone(const QString& node);
    // The node left or paused: a snapshot it owed is never coming — an unanswered audit (`left`).
    void nodeLeft(const QString& node);
    void tick(); // snapshot deadlines: a snapshot not sent in time is an unanswered audit

    qint64 audits() const { return m_audits; }
    qint64 failed() const { return m_failed; }
    qint64 unanswered() const { return m_unanswered; } // of the failed: the weights never came
    qint64 tasksRecomputed() const { return m_tasks; }
    // Relative errors of the audits that passed (for the status page and the benchmark).
    double worstPassedError() const { return m_worstPassed; }
    // Audits whose weights came and whose recomputation has not finished.
    int inFlight() const { return m_inFlight; }

Q_SIGNALS:
    void audited(const tessera::coordinator::AuditOutcome& outcome);

private:
    struct NodeAudit {
        std::vector<Evidence> evidence;
        qint64 round = 0; // the snapshot asked for; 0: none
        qint64 version = 0;
        qint64 deadlineMs = 0;
        qint64 requestedAtMs = 0;
        int stepsSinceSnapshot = std::numeric_limits<int>::max() / 2;
        bool urgent = false; // suspicious evidence: snapshot at this step's end
        std::shared_ptr<const std::vector<float>> reference; // the stage's weights when it was asked
    };

    void finish(const AuditOutcome& outcome);
    // The snapshot `audit` asked for will not come: its evidence judged on the reference where there
    // is one, then an unanswered outcome (or the lie the reference showed).
    void unanswered(const QString& node, NodeAudit& audit, bool left);
    qint64 deadlineMs(int stage) const;

    gpu::ModelConfig m_config;
    AuditSettings m_settings;
    SendText m_sendText;
    Clock m_clock;
    Reference m_reference;
    bool m_available = false; // the run's frames decode here (else nothing is audited)
    QThread m_thread;
    std::unique_ptr<AuditWorker> m_worker; // on m_thread
    Mailbox* m_jobs = nullptr;             // the worker's child, on m_thread
    Mailbox m_replies{this};
    int m_inFlight = 0;
    QHash<QString, NodeAudit> m_nodes;
    qint64 m_nextRound = qint64(1) << 40; // apart from the averager's rounds
    qint64 m_audits = 0;
    qint64 m_failed = 0;
    qint64 m_unanswered = 0;
    qint64 m_tasks = 0;
    double m_worstPassed = 0;
};

} // namespace tessera::coordinator

Q_DECLARE_METATYPE(tessera::coordinator::AuditOutcome)
