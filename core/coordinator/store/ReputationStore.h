// SPDX-License-Identifier: Apache-2.0
#pragma once
// ReputationStore: what the coordinator remembers of a node, and of the network it connects from,
// across sessions, keys and restarts — strikes, audits passed and failed, bans — in SQL (table
// `reputation`, one row per subject: "node:<id>" or "net:<prefix>").

#include "base/Result.h"

#include <QString>

namespace tessera::coordinator {

class Database;

struct ReputationRecord {
    QString subject;
    int strikes = 0; // results refused by the checks
    int auditsPassed = 0;
    int auditsFailed = 0;
    int bannedNodes = 0; // a network's: its nodes banned for a failed audit
    qint64 bannedUntilMs = 0;
    QString banReason;
    // A node's work accepted until then is covered by a passed audit that judged work of its kind:
    // forwards, and backwards (backward and forward_backward results: the gradients).
    qint64 auditedThroughMs = 0;
    qint64 backwardAuditedThroughMs = 0;
};

class ReputationStore final {
public:
    explicit ReputationStore(Database& db)
        : m_db(db) {}

    static QString nodeSubject(const QString& nodeId) { return QStringLiteral("node:") + nodeId; }
    static QString networkSubject(const QString& network) { return QStringLiteral("net:") + network; }

    // A subject never seen has a zero record (with its subject).
    Result<ReputationRecord> get(const QString& subject);
    Status put(const ReputationRecord& record, qint64 nowMs);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
