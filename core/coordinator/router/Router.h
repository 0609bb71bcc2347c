// SPDX-License-Identifier: Apache-2.0
#pragma once
// Router: the data plane — sends every microbatch through one node per stage, relays each
// stage's output to the next as codec bytes, retries failed tasks elsewhere, and ends every
// microbatch as completed or abandoned (see Microbatch.h for its phases).
//
// A window of microbatches is kept in flight so every stage stays busy over slow links; new
// ones are issued only while every stage has a node to run them. Nodes are picked per stage by
// StageScheduler (least expected finish time, EMA of seconds per token, bans). A backward goes
// to the node that ran the forward while that node still holds the graph (alive, no step since);
// otherwise to any replica, with the forward's input so it recomputes. A result that comes
// after its task was given to someone else is a duplicate: ignored, never credited.
//
// Between a result's arrival and its acceptance stands the check (setCheck: ResultCheck in the
// Trainer): a refused result is never relayed or credited, its phase goes to another node, and its
// producer — never the consumer that would have received it — is banned for a while. Who is reported
// (refused) depends on the input (issue 41, "framing"). Where the check failed on a bound an input can
// push an honest answer over (Refusal::inputMayCause) and the input came from another node, the blame
// waits for another replica's answer to the same input: accepted, the first node is reported; refused
// too, the node that sent the input is, the microbatch is dropped (one frame strikes nobody else) and
// neither replica is; unresolved (the microbatch ends first: no other replica, or the same node again),
// nobody is (refusalUnresolved) — unless the node has been refused on inputs from two different
// senders. Otherwise (the coordinator's own tokens, an echo, NaN) the producer is reported at once.
//
// A node's speed is the coordinator's own measurement (from sending a task, or from the node's
// previous answer when it was busy, to its answer), never the compute_seconds it reports.
//
// Single-threaded (the coordinator's thread). Sends through a callback, so tests can drive it.

#include "coordinator/router/Microbatch.h"
#include "coordinator/router/StageScheduler.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QTimer>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace tessera::coordinator {

struct RouterSettings {
    int window = 8;      // microbatches in flight
    int maxAttempts = 4; // sends of one phase before the microbatch is abandoned
    qint64 microbatchTimeoutMs = 120'000;
    // The asynchronous pipeline: tasks name their microbatch's step, and a node's graphs survive the
    // updates it is sent (its engine stashes the weights they need) — only its step's share ends them.
    bool pipelined = false;
    StageSchedulerSettings scheduler;
};

// What the feed gives the router for a new microbatch.
struct MicrobatchInput {
    QByteArray inputs;  // token frame (its CRC is computed once, when it is issued)
    QByteArray targets; // token frame
    int batch = 0;
    int seq = 0;
    qint64 step = 0; // the training step it counts toward
};

struct RouterCounters {
    qint64 issued = 0;
    qint64 completed = 0;
    qint64 abandoned = 0;
    qint64 retries = 0;    // phases sent again after a failure
    qint64 duplicates = 0; // results that came too late and were ignored
    qint64 tasksSent = 0;
    qint64 refused = 0; // results that failed their check
    qint64 framed = 0;  // of them, blamed on the node that sent the input (two replicas refused on it)
    qint64 refusedOnOrdinaryInput = 0; // two replicas refused on an ordinary input: nobody blamed
    qint64 checksSent = 0;     // re-executions (CheckTask), counted apart from the routed work
    qint64 checkFlop = 0;      // the FLOPs they asked for
    qint64 checksAnswered = 0; // with a result
};

// A re-execution (trust/Reexecution): one task of a microbatch run again by another replica of its
// stage. It travels as an ordinary task — the same kind, microbatch and frames, a backward always
// with its input — so the node cannot tell it from routed work; its answer is neither relayed nor
// counted toward the microbatch, it comes back through Router::checkAnswered or checkFailed.
struct CheckTask {
    qint64 microbatch = 0;
    qint64 step = 0;
    int stage = 0;
    TaskKind kind = TaskKind::Forward;
    qint64 tokens = 0;
    protocol::HeldFrame input;      // the stage's forward input
    protocol::HeldFrame targets;    // a forward_backward's
    protocol::HeldFrame gradientIn; // a backward's
    // Not 0: a share check's (trust/ShareCheck) — the node answers the count sketch of the weights'
    // gradient this microbatch gives (a Partition frame, the answer's `output`), not the task's output.
    qint64 sketchSeed = 0;
    // A forward's trace (trust/Bisection): the residual after each block (a Partition frame, `output`).
    bool trace = false;

    // The task `kind` of an accepted microbatch at its stage, as a check sends it again.
    static CheckTask of(const Microbatch& mb, TaskKind kind) {
        return CheckTask{mb.id,
                         mb.step,
                         mb.stage,
                         kind,
                         mb.tokens,
                         mb.inputs[std::size_t(mb.stage)],
                         kind == TaskKind::ForwardBackward ? mb.targets : protocol::HeldFrame(),
                         kind == TaskKind::Backward ? mb.gradient : protocol::HeldFrame()};
    }
};

// Why a re-execution (a check task) will not be answered: what the node's silence says of it.
enum class CheckSilence {
    Hid,       // it stayed and did not answer: an error, a missed deadline, a ban for either
    Left,      // it went: its socket closed, or it paused (a crash and a game look the same)
    Withdrawn, // the coordinator took it off: moved to another stage, or synced again
};

struct RouterStage {
    int stage = 0;
    int nodes = 0;    // routable nodes
    int inFlight = 0; // tasks in flight on them
    double medianSecondsPerToken = 0;
};

class Router final : public QObject {
    Q_OBJECT

public:
    using Send = std::function<bool(const QString& nodeId, const QByteArray& message)>;
    using Feed = std::function<std::optional<MicrobatchInput>()>;
    using Clock = std::function<qint64()>;
    // A result under check: the reason it is refused, or none. `output` is the frame it returned
    // (empty for a stage 0 backward), `loss` the last stage's.
    struct Refusal {
        QString why;
        bool inputMayCause = false; // a bound an input can push an honest answer over (ResultCheck)
    };
    using Check =
        std::function<std::optional<Refusal>(const QString& node, const Microbatch& mb, TaskKind kind,
                                             const protocol::HeldFrame& output, std::optional<double> loss)>;

    // stageParameters[s]: the parameter count N of stage s (for the FLOPs credited).
    Router(int stages, std::vector<qint64> stageParameters, RouterSettings settings, Send send, Feed feed,
           QObject* parent = nullptr);
    ~Router() override;

    void setClock(Clock clock) { m_clock = std::move(clock); }
    void setCheck(Check check) { m_check = std::move(check); }
    // Whether the input two replicas of a stage both refused on is itself out of the ordinary for the stage
    // that sent it (`activation`: a forward's input, else a backward's gradient): true or none (none: it
    // cannot be told), its sender is blamed; false, nobody is — the stage's own weights cross the bound on an
    // ordinary input (stageRefusesOrdinaryInput). Unset: the sender is blamed.
    using InputJudge = std::function<std::optional<bool>(int senderStage, bool activation,
                                                         const protocol::HeldFrame& input)>;
    void setInputJudge(InputJudge judge) { m_inputJudge = std::move(judge); }
    // Which nodes' work is verified: the others are scheduled no faster than their stage's typical node
    // (StageScheduler::setVerified).
    void setVerified(const StageScheduler::Verified& verified) {
        for (StageScheduler& scheduler : m_schedulers)
            scheduler.setVerified(verified);
    }
    // Microbatch ids go on from here (they are unique across restarts: the caller persists them).
    void setNextMicrobatchId(qint64 id) { m_nextMicrobatch = id; }
    // Issuing new microbatches (on by default); off lets what is in flight finish.
    void setIssuing(bool on);
    // Starts the periodic tick (deadlines and issuing); tests may call tick() themselves.
    void start(std::chrono::milliseconds interval = std::chrono::milliseconds(100));

    // A node ready for tasks of its stage. Adding a known node changes nothing.
    void addNode(const QString& nodeId, int stage, std::optional<double> secondsPerToken = std::nullopt);
    // The node left, paused or its socket closed: what it had in flight goes elsewhere (no ban).
    // `silence`: what its unanswered checks say (Left; Withdrawn where the coordinator took it off).
    void removeNode(const QString& nodeId, const QString& reason, CheckSilence silence = CheckSilence::Left);
    bool hasNode(const QString& nodeId) const { return m_nodes.contains(nodeId); }
    qint64 now() const { return m_clock(); } // the clock it was made with (ms)
    std::optional<int> stageOf(const QString& nodeId) const;
    // The scheduler's estimate of the node's seconds per token; none for a node not here.
    std::optional<double> secondsPerToken(const QString& nodeId) const {
        const auto it = m_nodes.constFind(nodeId);
        return it == m_nodes.cend() ? std::nullopt
                                    : m_schedulers[std::size_t(it->stage)].secondsPerToken(nodeId);
    }
    QStringList nodesOf(int stage) const;

    // A binary task_result from the node.
    // A task_result that came binary, with its frames.
    void onResult(const QString& nodeId, const protocol::TaskResult& result,
                  const protocol::TaskMessage& message);
    // Every node has just been sent the step's update (`step`, or gradient_result): their weights
    // change, and — unless pipelined — the graphs they hold are gone.
    void stepSent();
    // Issues what the feed gives now (the feed was holding back, e.g. for a gradient exchange).
    void kick();
    // The node's weights change without a step (an averaging result was sent to it): tasks sent
    // from now on run on another version of its weights (Microbatch::taskVersion).
    void weightsChanged(const QString& nodeId);
    // The version of the node's weights that a task sent to it now runs on; -1 for an unknown node.
    qint64 weightsVersion(const QString& nodeId) const;
    // The stage's weights era: it moves whenever a node of the stage is sent new weights (a step, an
    // averaging result). Replicas that both held the stage through an era hold the same weights then
    // (up to the exchange's rounding): what a re-execution needs (Microbatch::taskEra).
    qint64 era(int stage) const { return stage >= 0 && stage < m_stages ? m_era[std::size_t(stage)] : -1; }
    // Whether the node may re-execute another replica's task of `era` (a re-execution, a share's
    // sketch): it joined before that era, and — where replicas show their weights after each step
    // (setVerifiersShowWeights) — it has shown them since it joined. A replica just synced holds what
    // the sync sent; until its first fingerprint agreed, that is the sync's word, not proven.
    bool mayVerify(const QString& nodeId, qint64 era) const {
        const auto it = m_nodes.constFind(nodeId);
        return it != m_nodes.constEnd() && it->joinedEra < era && (!m_verifiersShowWeights || it->shown);
    }
    void setVerifiersShowWeights(bool on) { m_verifiersShowWeights = on; }
    // The node's fingerprint agreed with the checkpoint's (WeightCheck): it holds its replicas' weights.
    void weightsShown(const QString& nodeId) {
        if (const auto it = m_nodes.find(nodeId); it != m_nodes.end())
            it->shown = true;
    }
    // The node is banned for a while (a failed audit found later): what it has in flight goes elsewhere.
    void ban(const QString& nodeId, const QString& why);

    // Sends a re-execution to `node` (a replica of task.stage); its task id, or none when it was not
    // sent (the node is not routable for that stage, or not connected).
    std::optional<qint64> sendCheck(const QString& node, const CheckTask& task);
    int checksInFlight() const { return int(m_checks.size()); }

    void tick();
    // Ends every microbatch in flight as abandoned (a clean stop).
    void abandonAll(const QString& reason);

    const RouterCounters& counters() const { return m_counters; }
    int inFlight() const { return int(m_microbatches.size()); }
    std::vector<RouterStage> stageSummaries() const;
    int stages() const { return m_stages; }
    qint64 stageParameters(int stage) const { return m_stageParameters.at(std::size_t(stage)); }

Q_SIGNALS:
    void issued(qint64 microbatch, qint64 tokens);
    void completed(const tessera::coordinator::Microbatch& microbatch);
    void abandoned(const tessera::coordinator::Microbatch& microbatch);
    // A node's result failed its check (or lacked what it must carry): the node is to blame.
    void refused(const QString& node, int stage, const QString& reason);
    // A refused result whose blame could not be settled (the microbatch ended before another replica
    // answered the same input): nobody is reported; the node is worth a closer look.
    void refusalUnresolved(const QString& node, int stage, const QString& reason);
    // Two replicas of the stage refused on an input no different from what its sender's stage returns: no
    // node is to blame (the stage's weights are, or the bound); the microbatch ended.
    void stageRefusesOrdinaryInput(int stage, const QString& reason);
    // A re-execution's answer: its output frame (empty for a stage 0 backward) and loss (the last stage's).
    void checkAnswered(qint64 taskId, const QString& node, const tessera::protocol::HeldFrame& output,
                       std::optional<double> loss);
    // A re-execution that will not be answered: the node erred, missed its deadline, left or was banned.
    void checkFailed(qint64 taskId, const QString& node, const QString& why,
                     tessera::coordinator::CheckSilence silence);

private:
    struct NodeInfo {
        int stage = 0;
        qint64 epoch = 0;   // steps sent to it since it joined
        qint64 version = 0; // changes of its weights (steps and averaging results) since it joined
        qint64 joinedEra = 0;
        bool shown = false; // its weights' fingerprint agreed since it joined (mayVerify)
    };

    void issueWhilePossible();
    bool everyStageHasNodes() const;
    // Sends the current phase's task to a node, or leaves it waiting when none is free.
    void dispatch(Microbatch& mb);
    bool sendTask(Microbatch& mb, const QString& node, bool withInput);
    // The phase's task failed: `ban` the node (error, deadline) or not (it left); then retry.
    void failPhase(Microbatch& mb, const QString& why, bool ban);
    void advance(Microbatch& mb, const protocol::TaskResult& result, const protocol::TaskMessage& message,
                 double seconds);
    void refuse(Microbatch& mb, const QString& why, bool inputMayCause = false);
    // The phase's task given up: its node's slot released (banned for a while when `ban`).
    void releaseTask(Microbatch& mb, const QString& why, bool ban);
    // The node that sent the current phase's input, and its stage; none for the coordinator's tokens.
    std::optional<std::pair<QString, int>> inputSender(const Microbatch& mb) const;
    void finish(qint64 id, bool completed, const QString& reason = {});
    qint64 flopOf(int stage, TaskKind kind, bool recomputed, qint64 tokens) const;
    // A re-execution in flight, by task id.
    struct PendingCheck {
        QString node;
        int stage = 0;
        TaskKind kind = TaskKind::Forward;
        qint64 tokens = 0;
        qint64 sentAtMs = 0;
        qint64 deadlineMs = 0;
        bool sketch = false;
    };
    void onCheckResult(const QString& nodeId, const protocol::TaskResult& result,
                       const protocol::TaskMessage& message);
    // Ends the node's re-executions in flight as failed (it left, erred or was banned).
    void failChecksOf(const QString& nodeId, const QString& why, CheckSilence silence);

    int m_stages;
    std::vector<qint64> m_stageParameters;
    RouterSettings m_settings;
    Send m_send;
    Feed m_feed;
    Clock m_clock;
    Check m_check;
    InputJudge m_inputJudge;
    bool m_verifiersShowWeights = false;
    std::vector<StageScheduler> m_schedulers;
    std::vector<qint64> m_era; // by stage
    QHash<QString, NodeInfo> m_nodes;
    // Nodes refused on inputs other nodes sent, whose blame is not settled yet: by whom the inputs came.
    QHash<QString, QSet<QString>> m_refusedOnInputsFrom;
    std::map<qint64, Microbatch> m_microbatches; // in flight, by id
    QHash<qint64, qint64> m_taskToMicrobatch;    // task in flight → microbatch
    QHash<qint64, qint64> m_taskSentAtMs;
    QHash<QString, qint64> m_lastAnswerMs; // by node: when its previous result came
    QHash<qint64, PendingCheck> m_checks;  // re-executions in flight, by task id
    qint64 m_nextMicrobatch = 1;
    qint64 m_nextTask = 1;
    bool m_issuing = true;
    bool m_inTick = false;
    RouterCounters m_counters;
    QTimer m_timer;
};

} // namespace tessera::coordinator

Q_DECLARE_METATYPE(tessera::coordinator::Microbatch)
