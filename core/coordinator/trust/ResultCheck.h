// SPDX-License-Identifier: Apache-2.0
#pragma once
// ResultCheck: what the coordinator verifies in every returned tensor between its arrival and
// its acceptance — before it is relayed to the next stage or counted for credit. No node is trusted.
//
// The frame decodes under the run's codec with the microbatch's own batch and sequence; an
// activation carries the microbatch's own token ids; every value is finite and no token's RMS is
// above maxRms; the tensor is not all zeros and is not the task's own input sent back; the last
// stage's loss is finite and within [0, maxLoss]. A refused result is never relayed: the consumer
// never sees it, so an honest next stage is never blamed for what it was given.
//
// Past the hard checks, a result is judged against the statistics of what its stage's accepted
// results looked like (StageMonitor): per-token RMS, the change a stage makes to its input, the
// gradient's RMS, the cosine between the gradient a stage took and sent back, the loss. An outlier
// is suspicious, not refused: honest replicas of a stage drift apart between averaging rounds (and
// a joiner starts from the lagging checkpoint) by 2–3× in these numbers (measured: test_swarm
// struck two honest nodes when outliers were refused). A suspicious result is used, kept as audit
// evidence whatever the node's audit rate, and its node's weights are asked for at this step's
// end: the audit, not the statistic, decides (and the credit waits in escrow until it has). The
// statistics learn from the results of vetted nodes only — those that passed an audit since their
// last strike — suspicious or not: a picture drawn from everyone would be half a liar's on a stage of
// two replicas, and one that skipped suspicious values would freeze while training moves the honest
// values (measured: a third of an honest run's results became suspicious that way). The
// decoded values of an accepted result are kept a while (bounded by keptFloats), to compare the
// next stage's result with its input without decoding that input again.
//
// Every check reads a frame's *check rows* (gpu::FrameDecoder::activationForChecks), not its decoded
// rows: their norms, and the differences and dot products of two frames of the same ids, are the
// decoded rows' — which is all the checks measure. For the subspace codec that is k + 1 values a token
// instead of d, with no fixed-embedding row or U·c to compute: at 8b, 41 instead of 4,096 (the full
// decode made one coordinator core check ~1 microbatch a second; bench_capacity).
//
// It also decides which accepted results become audit evidence (Auditor): a node's share is
// probationRate until it has passed probationAudits audits, then trustedRate; a strike sends it
// back to probation (BOINC's adaptive replication). The draw is the coordinator's own randomness,
// after the answer came: nothing the node sees differs.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "coordinator/trust/StageMonitor.h"
#include "protocol/SessionMessages.h"

#include <QHash>
#include <QString>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

namespace tessera::gpu {
class FrameDecoder;
struct DecodedFrame;
} // namespace tessera::gpu

namespace tessera::coordinator {

struct ResultCheckSettings {
    bool enabled = true;         // off only to measure what the checks cost (bench_trust)
    double maxRms = 1e4;         // per-token RMS above this is refused (finite but huge)
    double maxLoss = 50;         // cross-entropy the last stage may report
    double probationRate = 0.25; // share of a new or suspect node's results kept for audit
    double trustedRate = 0.03;   // … once it has passed probationAudits audits
    int probationAudits = 10;
    StageMonitorSettings monitorSettings; // k = 0: no per-stage statistics
    qint64 keptFloats = 16 * 1024 * 1024; // decoded accepted results kept for the next stage's check
};

// What the checks found in one result: a reason to refuse it (it is not used), or to suspect it
// (it is used and audited).
struct CheckVerdict {
    std::optional<QString> refused;
    std::optional<QString> suspicious;
    // Refused on a bound an input can push an honest answer over (a token's RMS, a loss too large): the
    // Router then asks another replica before it blames the node (a frame). Not for what no input
    // explains (an echo, zeros, NaN, a frame that does not decode).
    bool inputMayCause = false;
};

// What the coordinator knows of one task and what came back. Views into the microbatch's frames.
struct TaskEvidence {
    QString node; // who returned it
    int stage = 0;
    int stages = 1;
    protocol::TaskKind kind = protocol::TaskKind::Forward;
    qint64 microbatch = 0;
    int batch = 0;
    int seq = 0;
    std::span<const std::uint8_t> tokens;     // the microbatch's token frame (stage 0's input)
    std::span<const std::uint8_t> input;      // the stage's forward input
    std::span<const std::uint8_t> targets;    // the last stage's
    std::span<const std::uint8_t> gradientIn; // what a middle stage's backward took
    std::span<const std::uint8_t> output;     // forward output, or the gradient for the stage before
    std::optional<double> loss;
};

class ResultCheck final {
public:
    using Random = std::function<double()>; // uniform in [0, 1)

    static Result<std::unique_ptr<ResultCheck>> create(const gpu::ModelConfig& config,
                                                       ResultCheckSettings settings = {});
    ~ResultCheck();

    void setRandom(Random random) { m_random = std::move(random); }
    const ResultCheckSettings& settings() const { return m_settings; }

    CheckVerdict check(const TaskEvidence& task);
    // Whether this accepted result of the node is kept for an audit (drawn at its audit rate).
    bool sampled(const QString& node);
    void auditPassed(const QString& node) { ++m_auditsPassed[node]; }
    // Passed an audit since its last strike (or no audits are drawn at all): its results are the
    // statistics' picture of honest ones.
    bool vetted(const QString& node) const {
        return m_auditsPassed.value(node, 0) >= 1 ||
               (m_settings.probationRate <= 0 && m_settings.trustedRate <= 0);
    }
    // Past probation: enough audits passed since its last strike (or no audits are drawn at all).
    bool trusted(const QString& node) const {
        return m_auditsPassed.value(node, 0) >= m_settings.probationAudits ||
               (m_settings.probationRate <= 0 && m_settings.trustedRate <= 0);
    }
    // The node's audit rate starts again at probation (a refused result, a failed audit).
    void probation(const QString& node) { m_auditsPassed.insert(node, 0); }

    // Whether a frame a node of `stage` returned (an activation, or a gradient for the stage before) is out
    // of the ordinary for that stage: its tokens' mean RMS an outlier among what the stage's vetted nodes
    // returned. None where that cannot be told (the statistics warming up or off, a frame that does not
    // decode). Router::setInputJudge: whether two replicas refused on an input are to blame its sender.
    std::optional<bool> unusualOutput(int stage, bool activation, std::span<const std::uint8_t> frame) const;

    qint64 checked() const { return m_checked; }
    qint64 refused() const { return m_refused; }
    qint64 suspicious() const { return m_suspicious; }
    const StageMonitor& monitor() const { return m_monitor; }

private:
    ResultCheck(const gpu::ModelConfig& config, ResultCheckSettings settings,
                std::unique_ptr<gpu::FrameDecoder> decoder);

    // A result's values as the hard checks decoded them, with the mean of its tokens' RMS.
    struct Decoded {
        std::vector<float> values;
        double meanRms = 0;
        bool bound = false; // refused on a bound an input can push an honest answer over
    };
    std::optional<QString> hardChecks(const TaskEvidence& task, Decoded* decoded);
    std::optional<QString> monitorChecks(const TaskEvidence& task, Decoded* decoded);

    // An accepted result's decoded values, kept under (microbatch, producing stage, activation?)
    // with a hash of its bytes: the next stage's input is used only if its bytes are the same.
    struct Kept {
        std::size_t hash = 0;
        std::vector<float> values;
    };
    using KeptKey = std::tuple<qint64, int, bool>;
    const Kept* kept(qint64 microbatch, int stage, bool activation,
                     std::span<const std::uint8_t> bytes) const;
    void keep(const TaskEvidence& task, bool activation, Decoded&& decoded);

    gpu::ModelConfig m_config;
    ResultCheckSettings m_settings;
    std::unique_ptr<gpu::FrameDecoder> m_decoder;
    Random m_random;
    QHash<QString, int> m_auditsPassed; // by node: audits passed since its last strike
    StageMonitor m_monitor;
    std::map<KeptKey, Kept> m_kept;
    std::deque<KeptKey> m_keptOrder; // oldest first
    qint64 m_keptFloats = 0;
    qint64 m_checked = 0;
    qint64 m_refused = 0;
    qint64 m_suspicious = 0;
};

} // namespace tessera::coordinator
