// SPDX-License-Identifier: Apache-2.0
// Membership: ready → ghost → routed → gone, joins and leaves, and moving nodes to empty stages.
#include "coordinator/training/Membership.h"

#include "coordinator/router/Router.h"
#include "coordinator/store/AssignmentLog.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/ReputationStore.h"
#include "coordinator/store/TrainingStore.h"
#include "coordinator/training/Averager.h"
#include "coordinator/training/NodeProbes.h"
#include "coordinator/training/Reclaim.h"
#include "coordinator/trust/Reputation.h"

namespace tessera::coordinator {

namespace {

constexpr qint64 kReassignGraceMs = 120'000;
// A node seen online this recently by the previous process is reconnecting, not joining.
constexpr qint64 kRejoinWindowMs = 10 * 60'000;

QString shortId(const QString& node) {
    return node.left(12);
}

} // namespace

Membership::Membership(Database& db, MembershipSettings settings, int stages, TrainingState& state,
                       Router& router, Averager& averager, NodeProbes& probes, SendText sendText, Clock clock)
    : m_db(db)
    , m_settings(settings)
    , m_stages(stages)
    , m_state(state)
    , m_router(router)
    , m_averager(averager)
    , m_probes(probes)
    , m_sendText(std::move(sendText))
    , m_clock(std::move(clock)) {}

void Membership::rememberOnlineNodes() {
    if (Result<std::vector<NodeRecord>> online = NodeRegistry(m_db).list(NodeState::Online); online)
        for (const NodeRecord& n : *online)
            if (n.lastSeenMs > m_clock() - kRejoinWindowMs)
                m_rejoining.insert(n.nodeId);
    // A clean stop marks its nodes offline; they hold the stages' weights all the same.
    if (Result<std::vector<NodeRecord>> all = NodeRegistry(m_db).list(); all && m_reclaim)
        for (const NodeRecord& n : *all)
            if (n.lastSeenMs > m_clock() - kRejoinWindowMs && n.stage)
                m_reclaim->expect(n.nodeId, *n.stage);
}

void Membership::onReady(const QString& node, const protocol::Ready& ready) {
    Result<std::optional<NodeRecord>> record = NodeRegistry(m_db).find(node);
    if (!record || !*record || !(*record)->stage || *(*record)->stage != ready.stage) {
        m_sendText(
            node,
            protocol::ErrorNotice{
                QStringLiteral("ready for stage %1, but this node is not assigned to it").arg(ready.stage)});
        return;
    }
    if (m_router.hasNode(node) || m_ghosts.contains(node) || (m_reclaim && m_reclaim->holds(node)))
        return;
    // A ban outlives `unavailable` then `ready`, reconnects and restarts (Reputation): a node that
    // failed an audit (or whose network is banned) is refused; one sitting out a strike is routed
    // and banned by the router for the rest of it.
    Result<std::optional<QString>> banned = Reputation(m_db).banned(node, (*record)->network, m_clock());
    Result<ReputationRecord> standing = ReputationStore(m_db).get(ReputationStore::nodeSubject(node));
    bool sitOut = false;
    if (!banned || !standing || (*banned && standing->auditsFailed > 0) ||
        (*banned && standing->bannedUntilMs <= m_clock())) {
        m_sendText(
            node, protocol::ErrorNotice{(banned && *banned ? **banned
                                                           : QStringLiteral("the coordinator could not check "
                                                                            "this node's standing"))
                                            .left(protocol::kMaxReasonChars)});
        return;
    }
    m_paused.remove(node);
    sitOut = banned && *banned;
    if (sitOut)
        m_sittingOut.insert(node);
    m_reassigned.remove(node);
    if (!m_rejoining.remove(node))
        ++m_state.joins;
    if (m_reclaim && m_reclaim->onReady(node, ready.stage))
        return; // held until the stage's current weights are taken back
    const QStringList replicas = m_router.nodesOf(ready.stage);
    if (m_settings.ghostSync && (!replicas.isEmpty() || (m_syncAlone && m_syncAlone(ready.stage)))) {
        // Ghost: take the weights of a live replica first.
        m_ghosts.insert(node, ready.stage);
        qInfo("trainer: node %s joins stage %d; syncing it from the checkpoint", qPrintable(shortId(node)),
              ready.stage);
        m_averager.startSync(node, ready.stage, ready.syncRound, ready.syncReceived);
        return;
    }
    route(node, ready.stage);
}

void Membership::onUnavailable(const QString& node, const QString& reason) {
    m_paused.insert(node);
    m_ghosts.remove(node);
    if (m_reclaim)
        m_reclaim->nodeGone(node);
    m_router.removeNode(node, reason.isEmpty() ? QStringLiteral("unavailable") : reason);
    m_averager.nodeGone(node);
}

void Membership::onClosed(const QString& node, bool stopping) {
    m_reassigned.remove(node);
    m_unsynced.remove(node);
    m_paused.remove(node);
    const bool held = m_reclaim && m_reclaim->holds(node);
    if (m_reclaim)
        m_reclaim->nodeGone(node);
    const bool wasIn = m_router.hasNode(node) || m_ghosts.remove(node) > 0 || held;
    if (wasIn && !stopping)
        ++m_state.leaves;
    // The coordinator closing every session is ours, not the node's leaving (its checks in flight too).
    if (stopping)
        m_router.removeNode(node, QStringLiteral("the coordinator is stopping"), CheckSilence::Withdrawn);
    else
        m_router.removeNode(node, QStringLiteral("disconnected"));
    m_averager.nodeGone(node);
}

void Membership::onSynced(const QString& ghost, int stage, bool ok, bool connected) {
    if (!m_ghosts.remove(ghost))
        return;
    // Where replicas are held equal a node routed with part of the state would differ from them: its
    // sync starts again (twice), and only a node that fails it a third time is routed as it is.
    if (!ok && connected && m_syncAlone && m_syncRetries.value(ghost) < 2) {
        m_syncRetries[ghost] += 1;
        qWarning("trainer: the sync of node %s failed; starting it again", qPrintable(shortId(ghost)));
        m_ghosts.insert(ghost, stage);
        m_averager.startSync(ghost, stage);
        return;
    }
    m_syncRetries.remove(ghost);
    m_unsynced.remove(ghost);
    if (!ok) {
        qWarning("trainer: node %s starts from the checkpoint (no replica could sync it)",
                 qPrintable(shortId(ghost)));
        m_unsynced.insert(ghost);
    }
    if (connected)
        route(ghost, stage);
}

void Membership::resync(const QString& node, const QString& why) {
    const std::optional<int> stage = m_router.stageOf(node);
    if (!m_syncAlone || !stage || m_ghosts.contains(node))
        return;
    qWarning("trainer: node %s holds weights unlike its replicas' (%s): syncing it again", qPrintable(shortId(node)),
             qPrintable(why.left(200)));
    m_router.removeNode(node, QStringLiteral("its weights missed a step"), CheckSilence::Withdrawn);
    m_ghosts.insert(node, *stage);
    m_averager.startSync(node, *stage);
}

void Membership::route(const QString& node, int stage) {
    qInfo("trainer: node %s takes tasks of stage %d", qPrintable(shortId(node)), stage);
    m_router.addNode(node, stage, m_probes.secondsPerToken(node));
    if (m_sittingOut.remove(node))
        m_router.ban(node, QStringLiteral("it has a strike to sit out"));
}

void Membership::onReclaimed(const ReclaimOutcome& outcome,
                             const std::function<bool(const QString&)>& connected) {
    for (const QString& node : outcome.held) {
        if (!connected(node))
            continue;
        if (outcome.keep.contains(node)) {
            route(node, outcome.stage);
            continue;
        }
        m_ghosts.insert(node, outcome.stage);
        m_averager.startSync(node, outcome.stage);
    }
}

int Membership::ghosts(int stage) const {
    int n = m_reclaim ? m_reclaim->waiting(stage) : 0;
    for (int s : m_ghosts)
        n += s == stage ? 1 : 0;
    return n;
}

NodeLive Membership::live(const QString& node) const {
    NodeLive out;
    out.secondsPerToken = m_router.secondsPerToken(node);
    if (!out.secondsPerToken)
        out.secondsPerToken = m_probes.secondsPerToken(node);
    if (m_reassigned.contains(node))
        out.activity = NodeActivity::Moving;
    else if (m_router.hasNode(node))
        out.activity = NodeActivity::Training;
    else if (m_ghosts.contains(node) || (m_reclaim && m_reclaim->holds(node)))
        out.activity = NodeActivity::Syncing;
    else if (m_paused.contains(node))
        out.activity = NodeActivity::Paused;
    return out;
}

void Membership::rebalance() {
    if (m_stages < 2)
        return;
    const qint64 t = m_clock();
    for (auto it = m_reassigned.begin(); it != m_reassigned.end();)
        it = t - it->sinceMs > kReassignGraceMs ? m_reassigned.erase(it) : std::next(it);
    for (int s = 0; s < m_stages; ++s) {
        bool moving = false;
        for (const Move& m : m_reassigned)
            moving = moving || m.stage == s;
        if (!m_router.nodesOf(s).isEmpty() || ghosts(s) > 0 || moving) {
            m_starvedSince.remove(s);
            continue;
        }
        const qint64 since = m_starvedSince.value(s, t);
        m_starvedSince.insert(s, since);
        if (t - since < m_settings.rebalanceAfterMs)
            continue; // a node of its own may come back (a restart, a resume)
        int donor = -1;
        qsizetype most = 1;
        for (int d = 0; d < m_stages; ++d)
            if (m_router.nodesOf(d).size() > most) {
                most = m_router.nodesOf(d).size();
                donor = d;
            }
        if (donor < 0)
            return; // no stage can spare a node: new nodes are admitted to the empty stage
        const QString node = m_router.nodesOf(donor).last();
        const Status moved = m_db.writeTransaction([&]() -> Status {
            if (Status set = NodeRegistry(m_db).setStage(node, s); !set)
                return set;
            return AssignmentLog(m_db).assign(node, s, t);
        });
        if (!moved) {
            qWarning("trainer: moving node %s to stage %d failed: %s", qPrintable(shortId(node)), s,
                     moved.message().c_str());
            return;
        }
        qInfo("trainer: stage %d has had no node for %lld s: node %s moves there from stage %d", s,
              qlonglong((t - since) / 1000), qPrintable(shortId(node)), donor);
        m_router.removeNode(node, QStringLiteral("moved to stage %1").arg(s), CheckSilence::Withdrawn);
        m_averager.nodeGone(node);
        if (m_onMoved)
            m_onMoved(node);
        m_reassigned.insert(node, Move{s, t});
        m_starvedSince.remove(s);
        m_sendText(node, protocol::Reassign{s, QStringLiteral("stage %1 has no node").arg(s)});
    }
}

} // namespace tessera::coordinator
