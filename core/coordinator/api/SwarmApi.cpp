// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/SwarmApi.h"

#include "common/WallClock.h"
#include "coordinator/store/Leaderboard.h"
#include "coordinator/store/NodeRegistry.h"
#include "protocol/CreditReceipt.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

constexpr qint64 kDayMs = 24 * 3600 * 1000;

HttpResponse storageError(const std::string& message) {
    qWarning("coordinator: reading the nodes and credits failed: %s", message.c_str());
    return HttpResponse::error(
        500, QStringLiteral("the coordinator failed to read its nodes and credits; try again later"));
}

double credits(qint64 microCredits) {
    return double(microCredits) / double(protocol::kMicroCreditsPerCredit);
}

// Who a node is on a public page: the name it opted into, else nobody in particular.
void insertIdentity(QJsonObject& o, const QString& nodeId, const QString& displayName, const QString& team) {
    o.insert(QStringLiteral("node"), SwarmApi::shortId(nodeId));
    o.insert(QStringLiteral("name"), displayName.isEmpty() ? QStringLiteral("anonymous") : displayName);
    o.insert(QStringLiteral("anonymous"), displayName.isEmpty());
    o.insert(QStringLiteral("team"), team);
}

} // namespace

SwarmApi::SwarmApi(Database& db, SwarmApiSettings settings)
    : m_db(db)
    , m_settings(settings)
    , m_nodesCache(settings.cacheFor)
    , m_leaderboardCache(settings.cacheFor) {}

QString SwarmApi::shortId(const QString& nodeId) {
    return nodeId.left(12);
}

HttpResponse SwarmApi::nodes(const HttpRequest&) {
    return m_nodesCache.get(WallClock::nowMs(), [this] { return makeNodes(); });
}

HttpResponse SwarmApi::leaderboard(const HttpRequest&) {
    return m_leaderboardCache.get(WallClock::nowMs(), [this] { return makeLeaderboard(); });
}

HttpResponse SwarmApi::makeNodes() {
    NodeRegistry registry(m_db);
    Result<std::vector<StageTotals>> totals = registry.stageTotals();
    if (!totals)
        return storageError(totals.message());
    Result<std::vector<OnlineNode>> online = registry.onlineByStage(m_settings.nodesPerStage);
    if (!online)
        return storageError(online.message());

    std::vector<QJsonArray> lists(std::size_t(std::max(m_settings.stages, 0)));
    for (const OnlineNode& n : *online) {
        if (n.stage < 0 || n.stage >= int(lists.size()))
            continue; // a stage the run no longer has
        const NodeLive live = m_live ? m_live(n.nodeId) : NodeLive{};
        QJsonObject o;
        insertIdentity(o, n.nodeId, n.displayName, n.team);
        o.insert(QStringLiteral("state"), nodeActivityName(live.activity));
        const bool measured =
            live.secondsPerToken && std::isfinite(*live.secondsPerToken) && *live.secondsPerToken > 0;
        o.insert(QStringLiteral("tokens_per_second"),
                 measured ? QJsonValue(1.0 / *live.secondsPerToken) : QJsonValue());
        o.insert(QStringLiteral("gflops"), n.benchGflops);
        o.insert(QStringLiteral("micro_credits"), n.microCredits);
        o.insert(QStringLiteral("credits"), credits(n.microCredits));
        lists[std::size_t(n.stage)].append(o);
    }
    QJsonArray stages;
    qint64 onlineTotal = 0;
    for (int s = 0; s < int(lists.size()); ++s) {
        qint64 count = 0;
        for (const StageTotals& t : *totals)
            count += t.stage == s ? t.nodes : 0;
        onlineTotal += count;
        const QJsonArray& list = lists[std::size_t(s)];
        stages.append(QJsonObject{{QStringLiteral("stage"), s},
                                  {QStringLiteral("nodes_online"), count},
                                  {QStringLiteral("nodes"), list},
                                  // Online but beyond nodes_per_stage: counted, not listed.
                                  {QStringLiteral("more"), std::max<qint64>(0, count - list.size())}});
    }
    return HttpResponse::json(200, QJsonDocument(QJsonObject{
                                       {QStringLiteral("stages"), stages},
                                       {QStringLiteral("nodes_online"), onlineTotal},
                                       {QStringLiteral("nodes_per_stage"), m_settings.nodesPerStage},
                                   }));
}

HttpResponse SwarmApi::makeLeaderboard() {
    const qint64 now = WallClock::nowMs();
    Leaderboard board(m_db);
    Result<std::vector<NodeStanding>> nodes = board.topNodes(m_settings.leaderboardSize, now - kDayMs);
    if (!nodes)
        return storageError(nodes.message());
    Result<std::vector<TeamStanding>> teams = board.topTeams(m_settings.leaderboardSize, now - kDayMs);
    if (!teams)
        return storageError(teams.message());

    QJsonArray nodeList;
    int rank = 0;
    for (const NodeStanding& n : *nodes) {
        QJsonObject o{{QStringLiteral("rank"), ++rank}};
        insertIdentity(o, n.nodeId, n.displayName, n.team);
        o.insert(QStringLiteral("micro_credits"), n.microCredits);
        o.insert(QStringLiteral("credits"), credits(n.microCredits));
        o.insert(QStringLiteral("micro_credits_24h"), n.recentMicroCredits);
        o.insert(QStringLiteral("credits_24h"), credits(n.recentMicroCredits));
        nodeList.append(o);
    }
    QJsonArray teamList;
    rank = 0;
    for (const TeamStanding& t : *teams)
        teamList.append(QJsonObject{{QStringLiteral("rank"), ++rank},
                                    {QStringLiteral("team"), t.team},
                                    {QStringLiteral("members"), t.members},
                                    {QStringLiteral("micro_credits"), t.microCredits},
                                    {QStringLiteral("credits"), credits(t.microCredits)},
                                    {QStringLiteral("micro_credits_24h"), t.recentMicroCredits},
                                    {QStringLiteral("credits_24h"), credits(t.recentMicroCredits)}});
    return HttpResponse::json(200, QJsonDocument(QJsonObject{
                                       {QStringLiteral("nodes"), nodeList},
                                       {QStringLiteral("teams"), teamList},
                                       {QStringLiteral("size"), m_settings.leaderboardSize},
                                       {QStringLiteral("generated_at"), now},
                                   }));
}

} // namespace tessera::coordinator
