// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeState: the node's lifecycle states, their names, and which transitions are allowed.
//
//   Benchmarking → Admitting → Waitlisted ⇄ Admitting
//                            → Downloading → Joining → Working ⇄ Paused
//   any state → Stopping (stop, hard pause, SIGTERM); Joining/Working/Paused → Admitting (session
//   lost or revoked: admit again); Downloading → Admitting (no manifest for the stage: /v1/info
//   again, or a new admission when the run has no such stage); Joining → Downloading (the shard
//   failed the loader's check); Working/Paused → Downloading (the coordinator moved the node to
//   another stage: its shard is fetched and loaded, the session stays open).
// A refusal that retrying cannot fix (this hardware fits no stage, a coordinator with another
// key) goes to Stopping with the reason, so `status` and the exit code say why.

#include <QString>

namespace tessera::node {

enum class NodeState { Starting, Benchmarking, Admitting, Waitlisted, Downloading, Joining, Working, Paused, Stopping };

QString nodeStateName(NodeState state); // "Working"
bool transitionAllowed(NodeState from, NodeState to);

} // namespace tessera::node
