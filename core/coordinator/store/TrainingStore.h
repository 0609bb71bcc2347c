// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrainingStore: what the data plane keeps in SQL — every microbatch issued and how it ended,
// the tasks that earned credit, the FLOPs not yet in a receipt, the step and the loss history.
//
// Writes are queued and go in one transaction per flush() (about once a second): a microbatch's
// completion, its accepted tasks and the pending credit they add are in the same transaction, so
// a crash loses whole microbatches, never half of one's accounting. What a dead process left in
// flight becomes "abandoned" on the next start (resume()); so issued = completed + abandoned +
// in flight holds in the database at every commit.

#include "base/Result.h"
#include "coordinator/router/Microbatch.h"
#include "coordinator/store/CreditLedger.h"

#include <QString>
#include <QStringList>
#include <QVariantList>

#include <vector>

namespace tessera::coordinator {

class Database;

struct TrainingState {
    qint64 step = 0;
    qint64 tokens = 0; // trained: tokens of completed microbatches
    qint64 joins = 0;
    qint64 leaves = 0;
    qint64 nextMicrobatch = 1;
    qint64 issued = 0;
    qint64 completed = 0;
    qint64 abandoned = 0;
    qint64 abandonedAtStart = 0; // left in flight by the previous process
    qint64 creditedFlop = 0;     // in receipts and pending
};

struct CreditEscrow {
    qint64 pendingFlop = 0;
    qint64 forfeitedFlop = 0;
    QString lastForfeitReason;
    qint64 lastForfeitAtMs = 0;
};

struct LossPoint {
    qint64 step = 0;
    double loss = 0;
    qint64 tokens = 0;
    qint64 atMs = 0;
};

class TrainingStore final {
public:
    explicit TrainingStore(Database& db)
        : m_db(db) {}

    // Marks what was in flight abandoned ("the coordinator restarted") and reads the state.
    Result<TrainingState> resume(qint64 nowMs);

    void issued(qint64 microbatch, qint64 step, qint64 tokens, qint64 atMs);
    void completed(const Microbatch& mb, qint64 atMs);
    void abandoned(const Microbatch& mb, qint64 atMs);
    void stepped(qint64 step, double loss, const TrainingState& state, qint64 atMs);
    // The step, tokens, joins and leaves (stepped() writes them too).
    void saveState(qint64 step, const TrainingState& state, qint64 atMs);
    bool hasPending() const { return !m_ops.empty(); }
    // Writes everything queued in one transaction; on failure it stays queued.
    Status flush();

    // Turns each node's pending FLOPs that may leave escrow — accepted before cutoffMs and before the
    // time its last passed audit covers — into one receipt (1 micro-credit per 10^9 FLOP, the
    // remainders carried so a node's micro-credits are exactly floor(its FLOPs / 10^9)).
    // Returns the nodes that got one.
    Result<QStringList> grantCredits(const CreditLedger::Signer& sign, qint64 nowMs, qint64 cutoffMs);
    // A failed audit: all the node's pending credit is forfeited, the reason kept for it to read.
    // Returns the FLOPs forfeited. The caller flushes first (queued work is pending too).
    Result<qint64> forfeit(const QString& node, const QString& reason, qint64 nowMs);
    // What the node has in escrow and what it lost.
    Result<CreditEscrow> escrow(const QString& node);

    Result<std::vector<LossPoint>> lossHistory(int maxPoints);
    // The whole run's loss, every process's steps, in at most maxPoints: consecutive steps averaged
    // together (in SQL) when there are more; each point at the last step of those it stands for.
    Result<std::vector<LossPoint>> lossCurve(int maxPoints);

private:
    struct Op {
        QString sql;
        QVariantList values;
    };
    Database& m_db;
    std::vector<Op> m_ops;
};

} // namespace tessera::coordinator
