// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reclaim: after a coordinator restart, each stage's current weights taken back from the nodes that
// held them — checked — instead of the last published checkpoint (up to `checkpoint-every` steps old
// after a SIGKILL, and a clean stop's publish covers only what the checkpoint had applied).
//
// The nodes a previous process had online within the rejoin window are expected back. The first of
// them ready on a stage opens the stage's reclaim: each expected node ready on it within `windowMs`
// is asked for all its weights (`sync_request`, the message of a ghost sync and an audit) and gets no
// task meanwhile. The reclaim closes when every expected node of the stage answered, left or the
// deadline passed (restarted by every chunk that comes — an 8b answer takes minutes on a home link —
// but never past `longestMs` from the stage's opening). What a node sends is a candidate only when
//   - it is finite, of the stage's size, from a node that never failed an audit, and
//   - every weight lies within what honest training could have moved it from the published
//     checkpoint: |w − c| ≤ k · lr · (κ·(1 + look-ahead) + wd · (|c| + k · lr · κ)) per coordinate,
//     k = the steps since the checkpoint plus slack, κ = 2 (AdamW moves a weight by at most ~1.17 lr
//     a step with β₁ = 0.9, β₂ = 0.95: |m̂/√v̂| ≤ (1−β₁)/√(1−β₂) · (1 − β₁²/β₂)^−½).
// Of the candidates: one is adopted as it is; two that agree (relative distance ≤ agreeTolerance)
// give their mean, two that do not the one nearer the checkpoint (a liar can cost the steps since
// the checkpoint, never move a weight further than training could); three or more give the robust
// combination (trust/RobustCombine: the coordinate-wise median of centered-clipped shares). The
// checkpoint takes the result and is published at once; a node whose weights are the result bit for
// bit goes on with them, every other node of the stage (refused, outvoted, or new and held while
// the stage was open) is synced from the checkpoint. No candidate: the published checkpoint stands
// (nothing better is known) and the nodes sync from it.
//
// Memory: a piece at a time, not a stage. An answer (4.4 GB at an 8b stage) is written to a file in
// `spillDir` as its chunks arrive and read back a piece (≤ pieceValues) at a time when the stage
// closes; the checkpoint is read and written a SPARTA partition at a time (the order answers travel
// in). The robust combination of three or more runs piece by piece (its clip radius and outliers are
// a piece's).

#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include "base/Result.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

class QTemporaryFile;

namespace tessera::coordinator {

struct ReclaimSettings {
    qint64 windowMs = 10'000;     // the stage's other expected nodes are asked if ready this soon
    qint64 deadlineMs = 60'000;   // for the weights asked for, restarted by each chunk that comes
    qint64 longestMs = 1'800'000; // a stage closes by then whatever still comes (8b: 5.2 GB an answer)
    double learningRate = 3e-3;   // the peak the nodes could have applied
    double weightDecay = 0.1;
    double lookAhead = 0;
    qint64 slackSteps = 10; // steps a node may have applied beyond the last one the database holds
    double agreeTolerance = 1e-2;
    int partitions = 20;    // the order the weights travel in
    qint64 chunkValues = 0; // values a message of an answer carries (0: PartitionChunks' default)
    QString spillDir;       // where answers are written while their stage is open (empty: the system's)
    qint64 pieceValues = 0; // values of each answer judged at once (0: PartitionChunks' default, 4 Mi)
};

// A stage's published checkpoint as the reclaim reads and writes it: a SPARTA partition at a time, in
// the order a node's answer carries them.
struct ReclaimCheckpoint {
    std::function<qint64(int stage)> stepsSince;              // the database's step less the checkpoint's
    std::function<std::vector<qint64>(int stage)> partitions; // their sizes, in order
    std::function<Result<std::vector<float>>(int stage, int partition)> values;
    std::function<Status(int stage, int partition, std::span<const float> values)> take;
};

// What a stage's reclaim found: whether the checkpoint took chosen weights, the nodes that hold them
// bit for bit, and every node the stage held meanwhile.
struct ReclaimOutcome {
    int stage = 0;
    bool took = false;         // the checkpoint took the chosen weights (to be published)
    std::vector<float> values; // the choice, from choose() on whole vectors only (tests)
    QStringList keep;          // their weights are the choice: routed as they are
    QStringList candidates;    // answers that passed the checks
    QStringList refused;       // answers that did not (why: in `summary`)
    QStringList held;          // every node held on the stage (asked or not), connected or not
    QString summary;           // one line for the log
};

class Reclaim final : public QObject {
    Q_OBJECT

public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using Clock = std::function<qint64()>;
    using FailedAudits = std::function<int(const QString& node)>;
    // An answer's values [offset, offset + count), in the order it travelled.
    using Piece = std::function<Result<std::vector<float>>(qint64 offset, qint64 count)>;
    // The checkpoint's values of a partition, and where the choice's go.
    using Reference = std::function<Result<std::vector<float>>(int partition)>;
    using Take = std::function<Status(int partition, std::span<const float> values)>;

    Reclaim(ReclaimSettings settings, ReclaimCheckpoint checkpoint, FailedAudits failedAudits,
            SendText sendText, Clock clock);
    ~Reclaim() override;

    // A node the previous process had online on `stage`: its weights are asked for when it is ready.
    void expect(const QString& node, int stage);
    // The node is ready on `stage`: true when the reclaim took it (its weights are asked for, or it
    // waits for the stage's reclaim to close); false: the usual path.
    bool onReady(const QString& node, int stage);
    bool awaitsShare(const QString& node, qint64 round) const;
    // A node's average_share: true when it answered this reclaim's request.
    bool onShare(const QString& node, const protocol::AverageShare& share,
                 const protocol::TaskMessage& message);
    void nodeGone(const QString& node);
    void tick();
    bool holds(const QString& node) const;
    int waiting(int stage) const; // nodes held on the stage

    // The per-coordinate bound and the choice, on their own: answers read a piece at a time, the
    // checkpoint a partition at a time, the choice handed to `take` a partition at a time.
    static ReclaimOutcome choose(int stage, const std::map<QString, Piece>& answers,
                                 const std::vector<qint64>& partitions, const Reference& reference,
                                 const Take& take, qint64 steps, const ReclaimSettings& settings);
    // The same on whole vectors (one partition): the choice in `values` (tests).
    static ReclaimOutcome choose(int stage, const std::map<QString, std::vector<float>>& answers,
                                 const std::vector<float>& reference, qint64 steps,
                                 const ReclaimSettings& settings);

Q_SIGNALS:
    void settled(const ReclaimOutcome& outcome);

private:
    // One node's answer, written to its file as its chunks arrive.
    struct Answer {
        std::unique_ptr<QTemporaryFile> file;
        qint64 received = 0; // values written
        bool complete = false;
        QString error; // why it cannot be taken (it is done, refused)
    };
    struct Stage {
        bool open = false;
        bool closed = false;
        qint64 openedAtMs = 0;
        qint64 deadlineMs = 0;
        qint64 values = 0;            // the stage's weights: what every answer must carry
        QHash<QString, qint64> asked; // node → round, until it answers or leaves
        std::map<QString, Answer> answers;
        QStringList held; // every node ready on the stage while it was open
    };
    // A chunk (or a whole answer) of `node` for `stage`: written, or why not.
    void takeChunk(int stage, Stage& s, const QString& node, const protocol::AverageShare& share,
                   const protocol::TaskMessage& message);
    void ask(int stage, Stage& s, const QString& node);
    void maybeClose(int stage);
    void close(int stage);

    ReclaimSettings m_settings;
    ReclaimCheckpoint m_checkpoint;
    FailedAudits m_failedAudits;
    SendText m_sendText;
    Clock m_clock;
    QHash<QString, int> m_expected; // node → stage
    std::map<int, Stage> m_stages;
    qint64 m_nextRound = qint64(1) << 40; // apart from the auditor's and averager's rounds
};

} // namespace tessera::coordinator
