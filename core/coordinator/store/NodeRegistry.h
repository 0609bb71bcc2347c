// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeRegistry: the nodes the coordinator has admitted, their state and their stage.

#include "base/Result.h"

#include <QString>
#include <QStringList>
#include <QVariantList>

#include <optional>
#include <vector>

namespace tessera::coordinator {

class Database;

enum class NodeState { Online, Offline };

QString nodeStateName(NodeState state); // "online", "offline": the text stored in nodes.state

struct NodeRecord {
    QString nodeId; // SHA-256 of the node's public key, hex
    QString publicKey;
    qint64 firstSeenMs = 0;
    qint64 lastSeenMs = 0;
    NodeState state = NodeState::Offline;
    QString hardwareJson;
    QString benchJson;
    QString clientVersion;
    std::optional<int> stage;
    QString network;     // what it was admitted from (trust/Reputation::networkOf)
    QString displayName; // opt-in (protocol/PublicProfile); empty: anonymous
    QString team;        // opt-in; empty: none
};

// What an admission tells about a node.
struct NodeAdmission {
    QString nodeId;
    QString publicKey;
    QString hardwareJson;
    QString benchJson;
    QString clientVersion;
    double benchGflops = 0; // bench_json's gflops, kept as a column for stageTotals()
    QString network;
    // What the node chose to show this time: a returning node that sends none becomes anonymous.
    QString displayName;
    QString team;
};

// An online node as the operator's page lists it: who (if it said), where, and what it earned.
struct OnlineNode {
    QString nodeId;
    int stage = 0;
    QString displayName; // empty: anonymous
    QString team;
    double benchGflops = 0;  // its own benchmark, as claimed at admission
    qint64 microCredits = 0; // granted (in receipts)
};

// Online nodes of one stage and their summed benchmark throughput.
struct StageTotals {
    int stage = 0;
    qint64 nodes = 0;
    double gflops = 0;
};

class NodeRegistry final {
public:
    explicit NodeRegistry(Database& db)
        : m_db(db) {}

    // A new node is inserted; a returning one keeps its first_seen and stage and gets the new
    // hardware, bench and version. Either way it is online and last seen now.
    Status admit(const NodeAdmission& admission, qint64 nowMs);
    Status setState(const QString& nodeId, NodeState state, qint64 nowMs);
    Status setStage(const QString& nodeId, std::optional<int> stage);
    Status touch(const QString& nodeId, qint64 nowMs);
    // last_seen = nowMs for every node named, in a few statements; unknown ids are skipped.
    Status touchMany(const QStringList& nodeIds, qint64 nowMs);
    // Marks offline, in one conditional UPDATE, every online node last seen before cutoffMs
    // (keeping its last_seen); returns how many.
    Result<int> markStaleOffline(qint64 cutoffMs);

    Result<std::optional<NodeRecord>> find(const QString& nodeId);
    // Online nodes admitted from `network`, `except` not counted.
    Result<qint64> onlineFromNetwork(const QString& network, const QString& except = {});
    // Filters are optional: nothing given lists every node, ordered by node id.
    Result<std::vector<NodeRecord>> list(std::optional<NodeState> state = std::nullopt,
                                         std::optional<int> stage = std::nullopt);
    Result<qint64> count(std::optional<NodeState> state = std::nullopt,
                         std::optional<int> stage = std::nullopt);
    // Per stage with at least one online node, leaving `exceptNodeId` out: one GROUP BY, so
    // an admission costs the same with 10 nodes known as with 10,000.
    Result<std::vector<StageTotals>> stageTotals(const QString& exceptNodeId = {});
    // The online nodes of each stage, at most perStage of each (those with the most credits first,
    // then by id), in one query; ordered by stage.
    Result<std::vector<OnlineNode>> onlineByStage(int perStage);

private:
    Status updateOne(const QString& nodeId, const QString& sql, const QVariantList& values);

    Database& m_db;
};

} // namespace tessera::coordinator
