// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reexecution: a node's accepted result checked by running its task again on another replica of
// the same stage — the check that needs no coordinator compute, so it holds at 8b, where no stage
// fits the coordinator's recomputation (Auditor). BOINC's redundancy, with Verde's referee.
//
//   1. A sampled result (the draw is the coordinator's, after the answer came) is sent again, as an
//      ordinary task (Router::sendCheck: the same kind, microbatch and frames, a backward with its
//      input), to another replica — preferably of another network — whose weights are the ones the
//      result was computed with: the stage's weights have not changed since the task was sent
//      (Router::era: a step or an averaging result changes them) and the replica held them then.
//   2. The two answers must agree token by token: every token's ‖a − b‖ within `tolerance` of its
//      norm (one relative error over the frame would let a node edit a few tokens), and the last
//      stage's losses within `lossTolerance`. Agreement verifies both (each was checked by the other).
//   3. On disagreement a third replica referees: the answer it agrees with stands, the other's node is
//      convicted. When no third replica can run it, or the referee agrees with both or neither, the
//      case is unsettled: nobody is convicted or verified, and both nodes' results are drawn at the
//      probation rate — unless no third replica could run it: trust/Bisection then settles it on the
//      coordinator by recomputing the one block (or encoding, or head) where the two answers part.
//   4. A verifier that does not answer (error, deadline, gone) is replaced, up to maxVerifiers; then
//      the case is dropped unjudged (the checked result stays unverified: its credit stays in escrow).
// A stage 0 backward returns no tensor: its re-execution compares nothing yet (its work shows only in
// the gradient share), so it is not drawn.
//
// Single-threaded (the coordinator's thread). Decodes only check rows (FrameDecoder): cheap at 8b.

#include "base/ModelConfig.h"
#include "coordinator/router/Router.h"

#include <QHash>
#include <QObject>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::gpu {
class FrameDecoder;
}

namespace tessera::coordinator {

struct ReexecutionSettings {
    double tolerance = 0.05;     // per token, relative (measured: docs/ARCHITECTURE.md, "Trust")
    double lossTolerance = 0.02; // absolute, in nats
    int maxVerifiers = 3;        // sends of one case (the verifier and the referee, with replacements)
    int maxPending = 256;        // cases open at once; a draw beyond it is skipped
};

// What one re-execution decided.
struct ReexecutionVerdict {
    int stage = 0;
    protocol::TaskKind kind = protocol::TaskKind::Forward;
    qint64 microbatch = 0;
    QString checked;        // the node whose accepted result was drawn
    qint64 acceptedAtMs = 0; // when that result was accepted
    QStringList verified;   // nodes whose answers stand (each agreed with another)
    QStringList convicted;  // nodes whose answers the referee contradicts
    bool unsettled = false; // two answers disagree and no referee settled it
    QStringList disputed;   // unsettled: the nodes whose answers disagree (back to probation)
    QStringList struck;     // a bisection's: nodes that did not answer the trace asked of them
    double worstError = 0;  // the largest per-token error between answers that agreed
    QString reason;         // why the convicted are convicted, or why it is unsettled
};

class Reexecution final : public QObject {
    Q_OBJECT

public:
    using Clock = std::function<qint64()>;
    using NetworkOf = std::function<QString(const QString& node)>;

    static Result<std::unique_ptr<Reexecution>> create(const gpu::ModelConfig& config,
                                                       ReexecutionSettings settings, Router& router,
                                                       Clock clock, NetworkOf networkOf);
    ~Reexecution() override;

    const ReexecutionSettings& settings() const { return m_settings; }

    // Whether the task can be checked this way: its result carries a tensor (not a stage 0 backward),
    // another replica of the stage could run it now, and the stage's weights are still those it ran on.
    bool checkable(const Microbatch& mb, protocol::TaskKind kind) const;
    // Re-executes an accepted result (the caller drew it). False when it could not be sent now.
    bool start(const QString& node, const Microbatch& mb, protocol::TaskKind kind,
               const protocol::HeldFrame& output, std::optional<double> loss);

    // Set: two answers that disagree with no third replica to referee go to it (true: it
    // took the case, and its verdict comes from it) instead of ending unsettled (trust/Bisection).
    using Settle = std::function<bool(const CheckTask& task, qint64 era, const ReexecutionVerdict& verdict,
                                      const QString& a, const protocol::HeldFrame& outputA,
                                      std::optional<double> lossA, const QString& b,
                                      const protocol::HeldFrame& outputB, std::optional<double> lossB)>;
    void setSettle(Settle settle) { m_settle = std::move(settle); }

    int pending() const { return int(m_cases.size()); }
    qint64 started() const { return m_started; }
    qint64 agreed() const { return m_agreed; }
    qint64 convictions() const { return m_convictions; }
    qint64 unsettled() const { return m_unsettled; }
    qint64 dropped() const { return m_dropped; }
    // The largest per-token error among answers that agreed (how close honest replicas came to the
    // tolerance: the calibration BENCHMARKS.md reports).
    double worstAgreedError() const { return m_worstAgreed; }

Q_SIGNALS:
    void judged(const tessera::coordinator::ReexecutionVerdict& verdict);

private:
    struct Answer {
        QString node;
        std::vector<float> rows; // check rows
        std::size_t width = 0;
        std::optional<double> loss;
        protocol::HeldFrame frame; // as it came
    };
    struct Case {
        CheckTask task;
        ReexecutionVerdict verdict;
        std::vector<Answer> answers; // the checked node's first
        QStringList tried;           // every node asked (or the checked one)
        int sends = 0;
        qint64 era = 0;
    };

    Reexecution(ReexecutionSettings settings, Router& router, Clock clock, NetworkOf networkOf,
                std::unique_ptr<gpu::FrameDecoder> decoder);
    // The answer's check rows; none when its frame does not decode (the node's answer is then wrong).
    std::optional<Answer> decode(const QString& node, const Case& c, const protocol::HeldFrame& output,
                                 std::optional<double> loss) const;
    // The per-token error between two answers (infinite when their shapes or losses differ beyond
    // the loss tolerance).
    double error(const Answer& a, const Answer& b) const;
    // Sends the case to one more replica; false when none is left or the stage's weights moved.
    bool sendNext(qint64 caseId, Case& c);
    void onAnswered(qint64 taskId, const QString& node, const protocol::HeldFrame& output,
                    std::optional<double> loss);
    void onFailed(qint64 taskId, const QString& node, const QString& why);
    // With every answer in: agreed, refereed, or a referee needed (false: still open).
    bool decide(Case& c);
    void close(qint64 caseId, bool decided);

    ReexecutionSettings m_settings;
    Router& m_router;
    Clock m_clock;
    NetworkOf m_networkOf;
    std::unique_ptr<gpu::FrameDecoder> m_decoder;
    Settle m_settle;
    std::map<qint64, Case> m_cases;       // by case id
    QHash<qint64, qint64> m_taskToCase;   // re-execution in flight → case
    qint64 m_nextCase = 1;
    qint64 m_started = 0;
    qint64 m_agreed = 0;
    qint64 m_convictions = 0;
    qint64 m_unsettled = 0;
    qint64 m_dropped = 0;
    double m_worstAgreed = 0;
};

} // namespace tessera::coordinator

Q_DECLARE_METATYPE(tessera::coordinator::ReexecutionVerdict)
