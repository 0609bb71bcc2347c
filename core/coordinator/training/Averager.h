#pragma once
// Averager: SPARTA over the network — every `interval` steps the replicas of each stage send
// the next partition of their weights; whoever answered before the deadline is averaged, the
// average goes back to them (each applies the delta rule) and to the coordinator's checkpoint.
// A slow or absent replica never blocks the others: the round closes at its deadline with
// whatever arrived, and routing never waits for a round.
//
// It also syncs a joining node (the "ghost" phase): one live replica sends all its weights,
// which go to the newcomer (and refresh the checkpoint), before the router sends it any task.
//
// Round of one stage: Open (request sent to the replicas) → Closed (all answered or deadline:
// averaged, results sent) ; a new round of the stage closes the previous one first.

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
    int interval = 20;   // steps between two rounds (DESIGN: 20)
    int partitions = 20; // the weights are averaged 1/partitions at a time (DESIGN: 5%)
    qint64 deadlineMs = 30'000;
    qint64 syncDeadlineMs = 60'000;
};

class Averager final : public QObject {
    Q_OBJECT

public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using SendBinary = std::function<bool(const QString& node, const QByteArray& message)>;
    using Clock = std::function<qint64()>;

    // How many values partition p (-1: all) of a stage holds: a share of another size is refused.
    using PartitionSize = std::function<qint64(int stage, int partition)>;

    Averager(int stages, PartitionSize partitionSize, AveragingSettings settings, SendText sendText,
             SendBinary sendBinary, QObject* parent = nullptr);

    const AveragingSettings& settings() const { return m_settings; }
    void setClock(Clock clock) { m_clock = std::move(clock); }
    bool isAveragingStep(qint64 step) const { return step > 0 && step % m_settings.interval == 0; }
    int partitionForStep(qint64 step) const {
        return int((step / m_settings.interval) % m_settings.partitions);
    }

    // Asks every replica of `stage` for the step's partition.
    void startRound(int stage, qint64 step, const QStringList& replicas);
    // A node's average_share (rounds and syncs alike). False when it was not expected.
    bool onShare(const QString& node, const protocol::AverageShare& share,
                 const protocol::TaskMessage& message);
    // The node left: rounds stop waiting for it; a sync it was the source of is failed.
    void nodeGone(const QString& node);
    // Starts the ghost phase of `ghost`: `source` (a live replica) sends all its weights.
    void startSync(const QString& ghost, int stage, const QString& source);
    // The ghost confirmed it took the weights.
    void onSyncDone(const QString& ghost, qint64 round);
    bool syncing(const QString& ghost) const;
    void tick(); // deadlines

    qint64 roundsCompleted() const { return m_roundsCompleted; }
    qint64 sharesReceived() const { return m_sharesReceived; }

Q_SIGNALS:
    // The average of a partition (partition -1: all the weights, from a sync).
    void averaged(int stage, int partition, const std::vector<float>& values, int replicas);
    // The ghost holds the stage's current weights (or the sync failed: it keeps the checkpoint's).
    void synced(const QString& ghost, int stage, bool ok);
    // The node was sent values that change its weights (a round's average, a sync).
    void weightsSent(const QString& node);

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
        QString source;
        qint64 deadlineMs = 0;
        bool sent = false; // weights sent to the ghost; waiting for sync_done
    };

    void closeRound(int stage);
    void endSync(const QString& ghost, bool ok);

    int m_stages;
    PartitionSize m_partitionSize;
    AveragingSettings m_settings;
    SendText m_sendText;
    SendBinary m_sendBinary;
    Clock m_clock;
    QHash<int, Round> m_rounds;   // open round per stage
    QHash<QString, Sync> m_syncs; // by ghost
    qint64 m_nextRound = 1;
    qint64 m_roundsCompleted = 0;
    qint64 m_sharesReceived = 0;
};

} // namespace tessera::coordinator
