// SPDX-License-Identifier: Apache-2.0
#pragma once
// AssignmentLog: the history of which node served which stage, and since when (table assignments).

#include "base/Result.h"

#include <QString>

#include <optional>

namespace tessera::coordinator {

class Database;

struct AssignmentRecord {
    qint64 id = 0;
    QString nodeId;
    int stage = 0;
    qint64 assignedAtMs = 0;
    std::optional<qint64> endedAtMs;
};

class AssignmentLog final {
public:
    explicit AssignmentLog(Database& db)
        : m_db(db) {}

    // Ends the node's open assignment, if any, and opens one for stage. Call it inside a write
    // transaction: the id is the next free one, which only a held write lock keeps unique.
    Status assign(const QString& nodeId, int stage, qint64 nowMs);
    Result<std::optional<AssignmentRecord>> current(const QString& nodeId);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
