// SPDX-License-Identifier: Apache-2.0
#pragma once
// Averager: SPARTA over the network — every `interval` steps the replicas of each stage send
// the next partition of their weights; whoever answered before the deadline is combined robustly
// (trust/RobustCombine: shares of nodes still on probation do not count, non-finite or far-off
// shares are dropped and their senders named, median with 3 or more), and the result goes back to
// every replica that sent a share it kept (each applies the delta rule) and to the checkpoint.
// A slow or absent replica never blocks the others: the round closes at its deadline with
// whatever arrived, and routing never waits for a round.
//
// It also syncs a joining node (the "ghost" phase) from the coordinator's checkpoint — never from
// one peer, which could hand every newcomer its own weights — before the router sends it any task.
// Nothing a ghost receives goes back into the checkpoint. The weights go in bounded chunks (16 MiB:
// an 8b stage is 4.4 GB), read from the checkpoint on disk as they are sent, two in flight, each
// answered by a sync_done; the chunk deadline restarts with every answer. A sync cut short (the
// ghost paused, its session dropped, a deadline) resumes where the ghost's weights stop when it is
// ready again (its ready message says how far it got in which round). Chunks are read as they go,
// so a sync that spans steps holds weights of a few adjacent checkpoint steps: the same lag a ghost
// synced whole has by the time it is routed, which SPARTA's rounds then close.
//
// Round of one stage: Open (request sent to the replicas) → Closed (all answered or deadline:
// averaged, results sent) ; a new round of the stage closes the previous one first.

#include "protocol/PartitionChunks.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QStringList>

#include <functional>
#include <vector>

namespace tessera::coordinator {

struct AveragingSettings {
    // Steps between two rounds (DESIGN: 20). 0: the run's default — 20 without gradient averaging; none
    // with it, where every replica and the checkpoint take the same AdamW step on the same state, so a
    // round would average equal values (and a round in flight across a step or a ghost's sync made
    // them unequal: measured, docs/ARCHITECTURE.md "Replicas that agree"). -1: no rounds.
    int interval = 0;
    int partitions = 20; // the weights are averaged 1/partitions at a time (DESIGN: 5%)
    qint64 deadlineMs = 30'000;
    qint64 syncDeadlineMs = 60'000; // for each chunk's answer
    // Values a message carries: a sync's chunks, a round's shares and results (PartitionChunks).
    qint64 chunkValues = protocol::kPartitionChunkValues;
    int syncWindow = 2; // chunks in flight
};

class Averager final : public QObject {
    Q_OBJECT

public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using SendBinary = std::function<bool(const QString& node, const QByteArray& message)>;
    using Clock = std::function<qint64()>;

    // How many values partition p (-1: all) of a stage holds: a share of another size is refused.
    using PartitionSize = std::function<qint64(int stage, int partition)>;
    // The checkpoint's values of partition p (-1: all) of a stage: a round's reference.
    using Reference = std::function<std::vector<float>(int stage, int partition)>;
    // The checkpoint's weights [offset, offset + count) of a stage in parameter order (a sync's
    // chunk); empty when they cannot be read.
    using Weights = std::function<std::vector<float>(int stage, qint64 offset, qint64 count)>;
    // What a sync of the stage carries when it starts: how many values `weights` reads for it (the
    // weights, or with AdamW's moments three times as many), and AdamW's steps then (-1: none).
    struct SyncShape {
        qint64 total = 0;
        qint64 optimizerSteps = -1;
    };
    using SyncShapeOf = std::function<SyncShape(int stage)>;
    // Whether a node's share counts (false while it is on probation).
    using Trusted = std::function<bool(const QString& node)>;

    Averager(int stages, PartitionSize partitionSize, AveragingSettings settings, SendText sendText,
             SendBinary sendBinary, QObject* parent = nullptr);

    const AveragingSettings& settings() const { return m_settings; }
    void setReference(Reference reference) { m_reference = std::move(reference); }
    void setWeights(Weights weights) { m_weights = std::move(weights); }
    // Without it a sync carries the weights alone (m_partitionSize(stage, -1) of them).
    void setSyncShape(SyncShapeOf shape) { m_syncShape = std::move(shape); }
    void setTrusted(Trusted trusted) { m_trusted = std::move(trusted); }
    void setClock(Clock clock) { m_clock = std::move(clock); }
    bool isAveragingStep(qint64 step) const {
        return m_settings.interval > 0 && step > 0 && step % m_settings.interval == 0;
    }
    int partitionForStep(qint64 step) const {
        return m_settings.interval > 0 ? int((step / m_settings.interval) % m_settings.partitions) : 0;
    }

    // Asks every replica of `stage` for the step's partition.
    void startRound(int stage, qint64 step, const QStringList& replicas);
    // Whether the node owes a share of round `round` (its chunks are worth putting together).
    bool awaitsShare(const QString& node, qint64 round) const;
    // A node's average_share (rounds and syncs alike). False when it was not expected.
    bool onShare(const QString& node, const protocol::AverageShare& share,
                 const protocol::TaskMessage& message);
    // The node left: rounds stop waiting for it; a sync it was the source of is failed.
    void nodeGone(const QString& node);
    // Starts the ghost phase of `ghost`: it is sent the checkpoint's weights of its stage. It resumes
    // a sync of round `heldRound` cut short for this ghost when the ghost says its weights took
    // `heldReceived` of them (no more than were sent); else it starts a new one from the start.
    void startSync(const QString& ghost, int stage, qint64 heldRound = 0, qint64 heldReceived = 0);
    // The ghost's answer to a chunk: how far its weights took the sync.
    void onSyncDone(const QString& ghost, const protocol::SyncDone& done);
    bool syncing(const QString& ghost) const;
    // The ghosts being synced on the stage now: they are sent every step's update as it happens (a
    // chunk read before it, then the update, applies as the checkpoint did).
    QStringList syncingOf(int stage) const;
    // The stage's weights took a step's update: a sync cut short before it cannot resume (what the
    // ghost took misses the update) and starts again.
    void stepApplied(int stage);
    void tick(); // deadlines

    qint64 roundsCompleted() const { return m_roundsCompleted; }
    qint64 sharesReceived() const { return m_sharesReceived; }
    qint64 syncChunksSent() const { return m_syncChunksSent; }
    qint64 syncsResumed() const { return m_syncsResumed; }

Q_SIGNALS:
    // The robust average of a partition, for the checkpoint.
    void averaged(int stage, int partition, const std::vector<float>& values, int replicas);
    // The ghost holds the stage's current weights (or the sync failed: it keeps the checkpoint's).
    void synced(const QString& ghost, int stage, bool ok);
    // The node was sent values that change its weights (a round's average, a sync).
    void weightsSent(const QString& node);
    // The node's share was dropped: not finite, or of a size no training reaches.
    void shareRefused(const QString& node, int stage, const QString& reason);

private:
    struct Round {
        qint64 id = 0;
        int partition = 0;
        qint64 deadlineMs = 0;
        QSet<QString> waiting;
        QHash<QString, std::vector<float>> shares;
    };
    struct Sync {
        qint64 id = 0;
        int stage = 0;
        qint64 deadlineMs = 0;
        qint64 total = 0; // the stage's weights
        qint64 sent = 0;  // weights sent, from the start
        qint64 acked = 0; // weights the ghost said it took
        bool stale = false; // cut short, and the weights took an update since
    };

    void closeRound(int stage);
    void sendChunks(const QString& ghost);
    void endSync(const QString& ghost, bool ok);

    int m_stages;
    PartitionSize m_partitionSize;
    Reference m_reference;
    Trusted m_trusted;
    AveragingSettings m_settings;
    SendText m_sendText;
    SendBinary m_sendBinary;
    Clock m_clock;
    QHash<int, Round> m_rounds; // open round per stage
    Weights m_weights;
    SyncShapeOf m_syncShape;
    QHash<QString, Sync> m_syncs; // by ghost
    QHash<QString, Sync> m_cut;   // by ghost: a sync cut short, to resume
    qint64 m_nextRound = 1;
    qint64 m_roundsCompleted = 0;
    qint64 m_sharesReceived = 0;
    qint64 m_syncChunksSent = 0;
    qint64 m_syncsResumed = 0;
};

} // namespace tessera::coordinator
