// SPDX-License-Identifier: Apache-2.0
#pragma once
// GradientAverager: the replicas of every stage average their gradients at every step
// (gpu/train/GradientExchange behind gpu::GradientCombiner). When a step's microbatches are all in,
// every routed node is sent `step {basis, rank}`; each answers a gradient_share (its share per
// microbatch, weighted by the microbatches it processed). At a low rank that share is PowerSGD's
// first round (P_r): the stage's first shares are combined as below into the basis P̂, sent as
// gradient_basis to the replicas whose first share counted, and each answers its second share
// (Q_r and the dense entries) — which make the result. A stage's shares are combined robustly
// (trust/RobustCombine: non-finite or mis-sized shares refused and their senders struck; shares of
// unvetted nodes do not count while a vetted one's does; CenteredClip bounds what any one share can
// move; the mean is weighted by microbatches), the combiner turns the mean into the result, the
// global norm over every stage sets the clip scale, the schedule sets the learning rate, and every
// node asked gets the same gradient_result (with `included`: whether its share counted — one that
// was not keeps its gradient in its error memory). The coordinator's checkpoint applies it too
// (`applied`), so it holds what the replicas hold.
//
// Round of a step, per stage: First (low rank: first shares asked) → Second (the basis sent, or
// everything dense: the shares asked) → Closed when every stage's second shares are in (every node
// asked answered, left, or the deadline passed: results sent). Each phase has the deadline; a node
// that misses it or leaves is dropped from the round without blocking it (one dropped from the
// second phase still gets the result, its memory keeping all of its gradient); a node that joins
// mid-step is asked at the next step's end.

#include "base/Result.h"
#include "protocol/PartitionChunks.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"
#include "train/LearningRateSchedule.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::gpu {
class GradientCombiner;
}

namespace tessera::coordinator {

struct GradientSettings {
    bool enabled = true; // off: every node steps on its own gradients (the first wave's swarm)
    int rank = 0;        // the exchange's rank (0: dense fp32, exact)
    // What a dense exchange's shares and results travel in: 8 (the default: learns as fp32 does,
    // 3.9x fewer bytes), 4, or 32 (fp32, exact). A low-rank exchange travels in fp32.
    int bits = 8;
    double clipNorm = 1.0; // global gradient-norm clip (0: none)
    gpu::LearningRateSchedule schedule;
    qint64 deadlineMs = 30'000; // a round waits at most this long for the shares
    // The asynchronous pipeline's staleness correction, sent with every result: the nodes' weights
    // run ahead of the optimizer's by this many times the update (0: none).
    double lookAhead = 0;
    // 4-byte words one message of a share, basis or result carries; more travel in chunks
    // (protocol/PartitionChunks; the run's --partition-chunk-values).
    qint64 chunkValues = 0;
    // A dense share's RMS per weight above this is no training's: left out of the round from the first
    // step (no history needed) — the global clip (norm 1) would shrink such a share by at least
    // √(weights); honest shares of the tiny stages run at 1e-4…1e-2. Not struck: a neighbour's frame
    // (gradients just under the result checks' bound) makes an honest node's share that large. 0: no bound.
    double maxShareRms = 1.0;
};

class GradientAverager final : public QObject {
    Q_OBJECT

public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using SendBinary = std::function<bool(const QString& node, const QByteArray& message)>;
    using Clock = std::function<qint64()>;
    using Trusted = std::function<bool(const QString& node)>;
    using Shapes = std::vector<std::vector<std::int64_t>>;

    // One combiner per stage, from the stages' parameter shapes.
    static Result<std::unique_ptr<GradientAverager>> create(const std::vector<Shapes>& stageShapes,
                                                            GradientSettings settings, std::uint64_t seed,
                                                            SendText sendText, SendBinary sendBinary,
                                                            Clock clock);
    ~GradientAverager() override;

    const GradientSettings& settings() const { return m_settings; }
    void setTrusted(Trusted trusted) { m_trusted = std::move(trusted); }
    // Nodes of a stage that share nothing but take every step's result as its replicas do (the
    // ghosts being synced: Averager::syncingOf), sent with included false.
    using Observers = std::function<QStringList(int stage)>;
    void setObservers(Observers observers) { m_observers = std::move(observers); }
    // Set: every step's result asks these nodes for their weights' fingerprint after it, under a
    // seed drawn for the stage and step (replicas that agree; not a ghost being synced).
    using Fingerprinted = std::function<bool(const QString& node, int stage)>;
    void setFingerprinted(Fingerprinted fingerprinted) { m_fingerprinted = std::move(fingerprinted); }
    // Set: once every stage's (dense) shares of a step are in, each stage's go through the gate; a stage
    // for which it answers true waits for sharesJudged (or the deadline) before the step's results go
    // out — trust/ShareCheck checks shares against their senders' work there.
    struct ShareView {
        QString node;
        const std::vector<float>* values = nullptr;
        int microbatches = 0;
        int claimed = 0; // what its sender divided by: more than `microbatches` when a result of it was refused
    };
    using ShareGate = std::function<bool(qint64 step, int stage, const std::vector<ShareView>& shares)>;
    void setShareGate(ShareGate gate) { m_shareGate = std::move(gate); }
    // The share the gate is judging, while it is still held (null once its sender left, or the round closed).
    const std::vector<float>* heldShare(qint64 step, int stage, const QString& node) const;
    // The gate's verdict on a stage's shares of `step`: these are left out of its mean.
    void sharesJudged(qint64 step, int stage, const QStringList& dropped);
    // A stage's result as it went out.
    struct Applied {
        int stage = 0;
        qint64 step = 0;
        qint64 round = 0;
        double learningRate = 0;
        double clipScale = 1;
        quint64 fingerprintSeed = 0; // 0: none asked
        QStringList fingerprinted;   // the nodes asked for one
    };

    // Step `step`'s microbatches are in: asks every replica of every stage for its share. `work`:
    // the backward tasks the coordinator accepted from each node this step — a share weighs the
    // lesser of that and the microbatches its sender claims (a claim is the sender's word).
    void start(qint64 step, const std::vector<QStringList>& replicas, const QHash<QString, int>& work = {});
    bool collecting() const { return m_round.has_value(); }
    // Whether the node owes a share of step `step` (its chunks are worth putting together).
    bool awaitsShare(const QString& node, qint64 step) const;
    // A node's gradient_share; false when no round expected it.
    bool onShare(const QString& node, const protocol::GradientShare& share,
                 const protocol::TaskMessage& message);
    void nodeGone(const QString& node);
    void tick(); // the deadline

    // rank, clip_norm, learning rate now and the schedule, rounds, last norm and clip scale, bytes.
    QJsonObject status() const;
    qint64 rounds() const { return m_rounds; }

Q_SIGNALS:
    // Results went out for `step` (or the round had nothing to send): the next step may start.
    void closed(qint64 step);
    // The stage's result, for the checkpoint to apply as the replicas do.
    void applied(const GradientAverager::Applied& applied, const std::vector<float>& result);
    void weightsSent(const QString& node);
    void shareRefused(const QString& node, int stage, const QString& reason);

private:
    bool sendInOrder(const QString& node, const std::vector<QByteArray>& messages) {
        return protocol::sendInOrder(messages, [&](const QByteArray& m) { return m_sendBinary(node, m); });
    }
    struct Received {
        std::vector<float> values;
        int microbatches = 0; // its weight: what it claimed, at most what the coordinator accepted of it
        int claimed = 0;      // what its sender divided by
    };
    struct StageRound {
        QStringList asked; // they all get the result
        QSet<QString> waiting;
        QHash<QString, Received> shares; // the phase's
        bool satOut = false;             // a replica held another round's warm start
        bool second = false;             // the phase: the (second) shares that make the result
        qint64 deadlineMs = 0;           // the phase's
    };
    struct Round {
        qint64 step = 0;
        std::vector<StageRound> stages;
        QHash<QString, int> work;
        bool gated = false;    // the shares went through the gate
        QSet<int> judging;     // stages whose shares the gate is checking
        qint64 judgingDeadlineMs = 0;
    };

    GradientAverager(std::vector<std::unique_ptr<gpu::GradientCombiner>> combiners, GradientSettings settings,
                     SendText sendText, SendBinary sendBinary, Clock clock);
    void maybeClose();
    // Every stage's shares are in: true while the gate checks some of them.
    bool gateShares();
    void close();
    // A stage whose first shares are all in: its basis goes to the replicas whose share counted.
    void sendBasis(int stage, StageRound& round);
    // The weighted robust mean of a stage's shares (of the round's phase), and the nodes whose
    // share counted.
    std::optional<std::vector<float>> combine(int stage, StageRound& round, QSet<QString>& counted);
    // Shares above maxShareRms (dense exchange) taken out of the round: left out, not struck.
    void leaveOutBeyondTraining(int stage, StageRound& round);

    std::vector<std::unique_ptr<gpu::GradientCombiner>> m_combiners;
    GradientSettings m_settings;
    SendText m_sendText;
    SendBinary m_sendBinary;
    Clock m_clock;
    Trusted m_trusted;
    Observers m_observers;
    Fingerprinted m_fingerprinted;
    ShareGate m_shareGate;
    static constexpr quint64 kMaxSeed = (quint64(1) << 53) - 1; // exact in JSON
    std::optional<Round> m_round;
    qint64 m_rounds = 0;
    qint64 m_lastStep = 0;
    double m_lastNorm = 0;
    double m_lastClipScale = 1;
    double m_lastLearningRate = 0;
    qint64 m_sharesCounted = 0, m_sharesMissed = 0, m_sharesClipped = 0, m_sharesOutvoted = 0;
    qint64 m_sharesBeyond = 0; // left out: RMS above maxShareRms
    qint64 m_sharesFailedCheck = 0; // left out by the gate (trust/ShareCheck)
    qint64 m_basesSent = 0;
    // Per stage and phase (2·stage + second): recent counted shares' norms (vetted nodes).
    std::vector<std::vector<double>> m_norms;
};

} // namespace tessera::coordinator
