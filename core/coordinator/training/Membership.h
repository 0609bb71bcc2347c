// SPDX-License-Identifier: Apache-2.0
#pragma once
// Membership: which nodes take part in training, and how they come and go.
//
// A node's life in the data plane: session open → (probe) → `ready` → Ghost (when its stage has a
// routed replica, that replica's weights are synced to it; it gets no task meanwhile) → Routed
// (gets tasks; takes part in averaging) → gone (`unavailable` on a pause, its session closed, or
// moved to another stage). Joins and leaves are counted in the training state. A stage left
// without a routed node for rebalanceAfterMs takes the last node of the fullest stage (≥ 2 nodes):
// the database assignment changes first, then the node is told to `reassign`.

#include "coordinator/training/NodeActivity.h"
#include "protocol/SessionMessages.h"

#include <QHash>
#include <QSet>
#include <QString>

#include <functional>

namespace tessera::coordinator {

class Averager;
class Database;
class Reclaim;
struct ReclaimOutcome;
class NodeProbes;
class Router;
struct TrainingState;

struct MembershipSettings {
    bool ghostSync = true;            // a joining node first takes a live replica's weights
    qint64 rebalanceAfterMs = 15'000; // a stage without a routed node this long takes one
};

class Membership final {
public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using Clock = std::function<qint64()>;

    Membership(Database& db, MembershipSettings settings, int stages, TrainingState& state, Router& router,
               Averager& averager, NodeProbes& probes, SendText sendText, Clock clock);

    // Nodes a previous coordinator process had online shortly before this one started: their
    // first `ready` is a reconnection, not a join. Read before the session sweep marks them offline.
    void rememberOnlineNodes();
    // After a restart, nodes ready on a stage are held while its weights are taken back (Reclaim).
    void setReclaim(Reclaim* reclaim) { m_reclaim = reclaim; }
    // A routed node's weights are not its replicas' (it could not apply a step, or its fingerprint
    // differed: WeightCheck): where replicas are held
    // equal it is a ghost again and takes the checkpoint's state; elsewhere nothing changes.
    void resync(const QString& node, const QString& why);
    // Whether a node joining the stage must sync even with no replica there (the checkpoint took
    // steps since the shard a joiner downloads: where replicas are held equal, it must hold them too).
    void setSyncAlone(std::function<bool(int stage)> syncAlone) { m_syncAlone = std::move(syncAlone); }
    // Called when rebalance() moves a node: what it was asked for on its old stage (an audit's
    // weights, a gradient share) can no longer be answered with that stage's weights.
    void setOnMoved(std::function<void(const QString& node)> onMoved) { m_onMoved = std::move(onMoved); }
    // The stage's reclaim closed (the checkpoint took what it found): the nodes holding its result
    // are routed, every other node it held is synced from the checkpoint.
    void onReclaimed(const ReclaimOutcome& outcome, const std::function<bool(const QString&)>& connected);

    void onReady(const QString& node, const protocol::Ready& ready);
    void onUnavailable(const QString& node, const QString& reason);
    // The node's last session closed; `stopping`: the coordinator is closing them all.
    void onClosed(const QString& node, bool stopping);
    // The ghost took the weights (or could not: it starts from the checkpoint's); routed if still here.
    void onSynced(const QString& ghost, int stage, bool ok, bool connected);
    // Moves a node to a stage that has had none for rebalanceAfterMs, from the fullest stage.
    void rebalance();

    // True once per node (and process) when it was routed with weights the coordinator did not give it (its
    // sync failed three times: it starts from the shard it downloaded): that divergence from the checkpoint is
    // ours to mend, not its to answer for. Once: a node failing its syncs on purpose strikes from the next on.
    bool excuseDivergence(const QString& node) {
        if (!m_unsynced.contains(node) || m_excusedDivergence.contains(node))
            return false;
        m_excusedDivergence.insert(node);
        return true;
    }

    int ghosts(int stage) const;
    // What the node is doing now and how fast it is, for the operator's page.
    NodeLive live(const QString& node) const;

private:
    void route(const QString& node, int stage);

    Database& m_db;
    MembershipSettings m_settings;
    int m_stages;
    TrainingState& m_state;
    Router& m_router;
    Averager& m_averager;
    NodeProbes& m_probes;
    SendText m_sendText;
    Clock m_clock;
    std::function<void(const QString& node)> m_onMoved;
    QHash<QString, int> m_ghosts; // syncing, by node → stage
    std::function<bool(int stage)> m_syncAlone;
    QHash<QString, int> m_syncRetries; // by ghost: syncs started again after a failure
    QSet<QString> m_unsynced;           // routed after its sync failed
    QSet<QString> m_excusedDivergence;  // excuseDivergence() answered true for it
    struct Move {
        int stage = 0;
        qint64 sinceMs = 0;
    };
    // Asked to switch, until it is ready on the new stage (or kReassignGraceMs passed: a node
    // that was paused meanwhile no longer keeps the stage looking held).
    QHash<QString, Move> m_reassigned;
    QHash<int, qint64> m_starvedSince; // stage → when it last had no node
    QSet<QString> m_rejoining;
    QSet<QString> m_sittingOut; // routed with a strike ban to sit out
    QSet<QString> m_paused;     // said `unavailable`, not `ready` since
    Reclaim* m_reclaim = nullptr;
};

} // namespace tessera::coordinator
