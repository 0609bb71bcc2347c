// SPDX-License-Identifier: Apache-2.0
#pragma once
// SwarmDatabase: what the swarm test reads from a stopped coordinator's SQLite file — how every
// microbatch ended, the FLOPs accepted against the credit granted, and the published checkpoints.

#include <QMap>
#include <QString>

#include <functional>

class QSqlQuery;

struct MicrobatchAccount {
    qint64 issued = 0; // rows: every microbatch the coordinator recorded
    qint64 completed = 0;
    qint64 abandoned = 0;
    qint64 inFlight = 0;
    qint64 otherState = 0;             // any state the schema does not name
    qint64 abandonedWithoutReason = 0; // abandoned must say why
    QMap<QString, qint64> abandonReasons;
};

struct NodeCredit {
    qint64 acceptedFlop = 0; // SUM(flop) of its accepted tasks
    qint64 receiptFlop = 0;  // SUM(flop) of its receipts
    qint64 microCredits = 0; // SUM(micro_credits) of its receipts
    qint64 receipts = 0;
    qint64 firstSeq = 0, lastSeq = 0;
    qint64 pendingFlop = 0;   // in escrow: not yet covered by an audit the node passed
    qint64 forfeitedFlop = 0; // lost to a refused result or a failed audit
};

struct CreditAccount {
    qint64 acceptedFlop = 0;
    qint64 acceptedTasks = 0;
    qint64 receiptFlop = 0;
    qint64 receipts = 0;
    qint64 pendingFlop = 0;
    qint64 forfeitedFlop = 0;
    QStringList forfeitReasons; // "node: FLOP: reason", one per credit_forfeits row
    QMap<QString, NodeCredit> nodes;
};

struct StageCheckpoints {
    qint64 latestStep = -1; // the step of the newest version
    qint64 published = 0;   // versions made from training (step > 0)
};

class SwarmDatabase final {
public:
    explicit SwarmDatabase(const QString& sqliteFile);
    ~SwarmDatabase();
    SwarmDatabase(const SwarmDatabase&) = delete;
    SwarmDatabase& operator=(const SwarmDatabase&) = delete;

    bool isOpen() const { return m_open; }
    const QString& error() const { return m_error; } // the last failure, with the SQL

    bool microbatches(MicrobatchAccount& out);
    bool credits(CreditAccount& out);
    // stage → what stage_versions holds of it.
    bool checkpoints(int stages, QMap<int, StageCheckpoints>& out);
    // training_state as the last step wrote it: step, tokens, joins, leaves.
    bool trainingState(qint64& step, qint64& tokens, qint64& joins, qint64& leaves);

private:
    bool query(const QString& sql, const std::function<void(const QSqlQuery&)>& row);

    QString m_connection;
    QString m_error;
    bool m_open = false;
};
