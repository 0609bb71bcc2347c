// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeActivity: what an online node is doing in the data plane right now, as the operator's page
// (GET /v1/nodes) shows it, with the coordinator's own measurement of its speed.
//
//   Waiting  — online, not ready for tasks yet (benchmarking, downloading its shard, probed)
//   Syncing  — ready, taking a live replica's weights (a ghost), or held while a restarted
//              coordinator takes its stage's weights back
//   Training — routed: it gets tasks and takes part in averaging
//   Moving   — asked to switch stages, not ready on the new one yet
//   Paused   — it said it is unavailable (its owner is gaming, on battery, …)

#include <QString>

#include <optional>

namespace tessera::coordinator {

enum class NodeActivity { Waiting, Syncing, Training, Moving, Paused };

// "waiting", "syncing", "training", "moving", "paused": the state in /v1/nodes.
QString nodeActivityName(NodeActivity activity);

struct NodeLive {
    NodeActivity activity = NodeActivity::Waiting;
    // The router's estimate (its probe, then the moving average of its tasks); none before either.
    std::optional<double> secondsPerToken;
};

} // namespace tessera::coordinator
