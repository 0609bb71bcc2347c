// SPDX-License-Identifier: Apache-2.0
#pragma once
// SwarmApi: who takes part and what they earned, for the operator's page and anyone curious —
//   GET /v1/nodes        the online nodes of each stage: state, speed, benchmark, credits granted
//   GET /v1/leaderboard  the nodes and the teams with the most granted credit, all time and 24 h
// A node appears by the display name it opted into (protocol/PublicProfile), else as "anonymous";
// its id only shortened. Both answers are cached for a few seconds (ResponseCache): each costs a
// sum over credit receipts. Stages are numbered from 0, as everywhere in /v1; the page adds one.

#include "coordinator/api/ResponseCache.h"
#include "coordinator/http/HttpRequest.h"
#include "coordinator/http/HttpResponse.h"
#include "coordinator/training/NodeActivity.h"

#include <QString>

#include <chrono>
#include <functional>

namespace tessera::coordinator {

class Database;

struct SwarmApiSettings {
    int stages = 1;
    int nodesPerStage = 100; // /v1/nodes lists at most this many of each stage (the most credit first)
    int leaderboardSize = 50;
    std::chrono::milliseconds cacheFor{std::chrono::seconds(3)};
};

class SwarmApi final {
public:
    // The data plane's view of a node (Trainer::live); none: every node is "waiting", speed unknown.
    using Live = std::function<NodeLive(const QString& nodeId)>;

    SwarmApi(Database& db, SwarmApiSettings settings);

    void setLive(Live live) { m_live = std::move(live); }

    // 200 {"stages": [{"stage", "nodes_online", "nodes": [{"node", "name", "anonymous", "team",
    // "state", "tokens_per_second" (null: not measured yet), "gflops", "micro_credits", "credits"}],
    // "more"}], "nodes_online", "nodes_per_stage"}
    http::HttpResponse nodes(const http::HttpRequest& request);
    // 200 {"nodes": [{"rank", "node", "name", "anonymous", "team", "micro_credits", "credits",
    // "micro_credits_24h", "credits_24h"}], "teams": [{"rank", "team", "members", "micro_credits",
    // "credits", "micro_credits_24h", "credits_24h"}], "size", "generated_at"}
    http::HttpResponse leaderboard(const http::HttpRequest& request);

    // The first 12 hex digits of a node id: enough to tell nodes apart on a page.
    static QString shortId(const QString& nodeId);

private:
    http::HttpResponse makeNodes();
    http::HttpResponse makeLeaderboard();

    Database& m_db;
    SwarmApiSettings m_settings;
    Live m_live;
    ResponseCache m_nodesCache;
    ResponseCache m_leaderboardCache;
};

} // namespace tessera::coordinator
