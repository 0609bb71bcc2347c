// SPDX-License-Identifier: Apache-2.0
#pragma once
// Bisection: a disputed forward settled on the coordinator by recomputing one block of it (issue 41,
// item 1; Verde's referee, to one block). When two replicas' answers to the same forward disagree and
// no third replica can referee (Reexecution: "unsettled"), both are asked for the forward's trace —
// the residual stream after each of the stage's blocks (a task with `trace`, on the weights they held
// when they answered: no update has reached them since, Router::era). The two traces agree up to some
// block and part there (or agree to the last block, and the answers part in the codec's encoding):
// the coordinator recomputes that one segment — the block from the agreed residual before it, with the
// checkpoint's weights of that block alone (replicas that agree hold the checkpoint's weights), or the
// encoding of the agreed last residual — and the node whose trace (or answer) differs from it is
// convicted. Both differ: both convicted; neither: unsettled, as before. A node that does not answer
// its trace (an error, its deadline, it left or paused) is struck: silence is no dodge.
//
// What a node can do against it: its trace is its word, but the first boundary where two words part
// is recomputed from a residual both gave (so the honest one's), and a node whose trace does not
// lead to its own answer is convicted at the encoding. The coordinator computes one block (at 8b a
// quarter of a stage: ~250 M parameters, their weights read from the checkpoint's file alone).
//
// A backward (a middle stage's) or a last stage's forward_backward is traced the same way, with the
// gradients at every block boundary after the residuals: the residuals are compared first (a forward
// block recomputed), then the gradients from the top — the gradient the node was given (a middle stage)
// or the head's (the last stage, with its loss), then each block's backward from the agreed gradient
// after it — then the codec's encoding of the agreed input gradient, and a last stage's answered loss.
// A stage 0 backward returns nothing, so it is never disputed this way.
//
// Single-threaded (the coordinator's thread): the recompute runs there — milliseconds at tiny, seconds
// for an 8b block (to move to the audit worker's thread).

#include "base/ModelConfig.h"
#include "coordinator/router/Router.h"
#include "coordinator/trust/Departures.h"
#include "coordinator/trust/Reexecution.h"
#include "coordinator/trust/ShareCheck.h"

#include <QHash>
#include <QObject>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::gpu {
class FrameDecoder;
class StageEngine;
} // namespace tessera::gpu

namespace tessera::coordinator {

class Bisection final : public QObject {
    Q_OBJECT

public:
    // The checkpoint's weights [offset, offset + count) of a stage, in parameter order.
    using Weights = std::function<Result<std::vector<float>>(int stage, qint64 offset, qint64 count)>;

    static Result<std::unique_ptr<Bisection>> create(const gpu::ModelConfig& config, double tolerance,
                                                     Router& router, Weights weights);
    ~Bisection() override;

    // Bisects the disputed forward `task` between a and b (their answers as they came); `verdict` is
    // the re-execution's so far. False when it cannot be (not a forward of a stage before the last, the
    // stage's weights moved since the task ran, a trace could not be sent).
    bool start(const CheckTask& task, qint64 era, const ReexecutionVerdict& verdict, const QString& a,
               const protocol::HeldFrame& outputA, std::optional<double> lossA, const QString& b,
               const protocol::HeldFrame& outputB, std::optional<double> lossB);
    // A spot check where no other replica can re-execute the node's work (a lone replica, or one that joined
    // since the task ran): the node is asked for the
    // trace of `task`, which it answered with `output` (and `loss`); once it came, the coordinator
    // recomputes the encoding of its last row (its answer must be what its trace leads to) and one segment
    // drawn then — a block's forward or backward, the head, the gradient it was given — from the trace's
    // own row before it. The node commits to every row before the draw, so a trace made up to fit a lie
    // parts from the recompute at the segment it made up, found at a rate of one in the stage's segments
    // a check. False when it cannot be (as start(), or too many cases pending).
    bool spotCheck(const CheckTask& task, qint64 era, const QString& node, const protocol::HeldFrame& output,
                   std::optional<double> loss, qint64 acceptedAtMs);
    // A lone replica's gradient share checked against its own work (trust/ShareCheck, where no other replica
    // can sketch its microbatch). drawShareSegment draws a segment with weights (a block, or the last stage's
    // head), each as likely, and says where its weights lie in the share; ShareCheck keeps the share's values
    // there. traceShare then asks the node for the trace of `task` (a backward it answered with `output` and
    // `loss`); once it came, the spot check's recomputes run — its answer's encoding, the top of its
    // gradients (the head's from its last residual and the targets, or the gradient it was given: neither is
    // the node's word) and one segment drawn then — and the drawn segment's weights' gradient g is recomputed
    // from the trace's rows: `done` gets n·⟨g, s⟩/‖g‖² and ‖s‖/‖g‖ (s the share's values there), as
    // ShareCheck judges a replica's sketch. A trace that does not hold, or none, is judged as a spot check's
    // (`judged`: convicted, or struck for silence). False when it cannot be (not traceable, too many
    // pending).
    std::optional<ShareSegment> drawShareSegment(int stage);
    bool traceShare(const CheckTask& task, qint64 era, const QString& node, const protocol::HeldFrame& output,
                    std::optional<double> loss, const ShareSegment& segment,
                    std::shared_ptr<const std::vector<float>> values, int microbatches,
                    std::function<void(const ShareLook&)> done);
    // Whether a bisection of the stage waits for traces (the step's update waits for it: the checkpoint
    // must still hold the weights the traces ran on).
    bool pendingOn(int stage) const;
    // Whose departures are remembered (Departures): the coordinator's, shared with its audits. Its own otherwise.
    void setDepartures(Departures* departures) { m_departures = departures ? departures : &m_ownDepartures; }

    qint64 started() const { return m_started; }
    qint64 convictions() const { return m_convictions; }
    qint64 unsettled() const { return m_unsettled; }
    qint64 spotChecks() const { return m_spotChecks; }
    qint64 spotChecksPassed() const { return m_spotChecksPassed; }
    qint64 spotConvictions() const { return m_spotConvictions; }

Q_SIGNALS:
    void judged(const tessera::coordinator::ReexecutionVerdict& verdict);
    // No bisection of the stage waits any more.
    void settled(int stage);

private:
    struct Side {
        QString node;
        protocol::HeldFrame output;
        std::optional<double> loss; // a last stage's answer's
        qint64 taskId = 0;
        std::optional<std::vector<float>> trace;
        QString silence; // why it did not answer
        CheckSilence silenceKind = CheckSilence::Hid;
    };
    struct ShareSlice {
        ShareSegment segment;
        std::shared_ptr<const std::vector<float>> values; // the share's, at segment
        int microbatches = 0;
        std::function<void(const ShareLook&)> done;
        ShareLook look; // what done gets (Unjudged until judged)
    };
    struct Case {
        CheckTask task;
        qint64 era = 0;
        ReexecutionVerdict verdict;
        std::vector<Side> sides; // two disputing replicas, or a lone replica's spot check
        std::optional<ShareSlice> share; // a lone replica's share check (traceShare)
    };

    Bisection(const gpu::ModelConfig& config, double tolerance, Router& router, Weights weights,
              std::unique_ptr<gpu::FrameDecoder> decoder);
    void onAnswered(qint64 taskId, const QString& node, const protocol::HeldFrame& output);
    void onFailed(qint64 taskId, const QString& node, const QString& why, CheckSilence silence);
    void maybeJudge(qint64 caseId);
    // Whether a side's silence goes unstruck: a node the coordinator took off, always; one that left (its
    // socket closed, or it paused — a crash and a game look the same), once a day; one that stayed, never.
    bool excused(const Side& side);
    // The verdict of a case whose traces are both in.
    void judge(Case& c);
    // A spot check's verdict, its trace in.
    void judgeAlone(Case& c);
    // A share check's look at the segment's weights' gradient, its trace held.
    void judgeShare(Case& c, std::int64_t size);
    // Whether the trace has the rows a task of its kind gives at the stage.
    bool fits(const Case& c, const Side& side, std::int64_t size, int blocks) const;
    // `shareLook`: a first stage's backward too (its trace holds the gradients a share is made of; it
    // answers no tensor a dispute or a spot check could compare).
    bool traceable(const CheckTask& task, qint64 era, bool shareLook = false) const;
    // A lone replica's trace asked (a spot check, or a share's look when `share` is set).
    bool startAlone(const CheckTask& task, qint64 era, const QString& node, const protocol::HeldFrame& output,
                    std::optional<double> loss, qint64 acceptedAtMs, std::optional<ShareSlice> share);
    bool send(qint64 id, Case c);
    // Where a judged trace parts from the other, and what the coordinator recomputes there.
    struct Parting {
        enum Kind { Forward, Encoding, Head, GivenGradient, Backward, GradientEncoding } kind = Forward;
        int block =
            0; // Forward: the block whose output parts; Backward: the block whose input gradient parts
    };
    // Where the traces part, or none when a trace is not the stage's shape.
    std::optional<Parting> firstParting(const Case& c, std::int64_t size, int blocks) const;
    std::optional<Parting> firstGradientParting(const Case& c, std::int64_t size, int blocks) const;
    // The recomputed segment's per-token errors against each side; false when it could not be run.
    bool recompute(Case& c, const Parting& at, std::int64_t size, double errors[2]);
    bool recomputeHead(Case& c, std::int64_t size, double errors[2]);
    bool recomputeEncoding(Case& c, const Parting& at, std::int64_t size, double errors[2]);
    // The checkpoint's weights of one segment (block b; blocks(): the head) into the engine.
    bool loadWeights(gpu::StageEngine& e, int stage, int segment);
    static QString describe(const Parting& at);
    gpu::StageEngine* engine(int stage);
    void finish(qint64 caseId);

    gpu::ModelConfig m_config;
    double m_tolerance;
    Router& m_router;
    Weights m_weights;
    std::unique_ptr<gpu::FrameDecoder> m_decoder;
    std::map<int, std::unique_ptr<gpu::StageEngine>> m_engines; // by stage, made at first use
    std::map<qint64, Case> m_cases;
    QHash<qint64, qint64> m_taskToCase;
    Departures m_ownDepartures;
    Departures* m_departures = &m_ownDepartures; // setDepartures: the coordinator's, shared with audits
    qint64 m_nextCase = 1;
    qint64 m_started = 0, m_convictions = 0, m_unsettled = 0;
    qint64 m_spotChecks = 0, m_spotChecksPassed = 0, m_spotConvictions = 0;
};

} // namespace tessera::coordinator
