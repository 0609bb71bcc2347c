// SPDX-License-Identifier: Apache-2.0
#pragma once
// Leaderboard: the nodes and teams with the most granted credit (credit receipts), read with one
// aggregating query each. A node is shown by the display name it opted into, else as anonymous;
// a team is whatever its members called it, letter for letter.

#include "base/Result.h"

#include <QString>

#include <vector>

namespace tessera::coordinator {

class Database;

struct NodeStanding {
    QString nodeId;
    QString displayName; // empty: anonymous
    QString team;        // empty: none
    qint64 microCredits = 0;
    qint64 recentMicroCredits = 0; // in receipts issued since the `since` asked for
};

struct TeamStanding {
    QString team;
    qint64 members = 0; // nodes that named the team, with credit or not
    qint64 microCredits = 0;
    qint64 recentMicroCredits = 0;
};

class Leaderboard final {
public:
    explicit Leaderboard(Database& db)
        : m_db(db) {}

    // The `limit` nodes with the most credit (ties by node id); nodes without a receipt are left out.
    Result<std::vector<NodeStanding>> topNodes(int limit, qint64 sinceMs);
    // The `limit` teams with the most credit (ties by name), their members counted.
    Result<std::vector<TeamStanding>> topTeams(int limit, qint64 sinceMs);

private:
    Database& m_db;
};

} // namespace tessera::coordinator
