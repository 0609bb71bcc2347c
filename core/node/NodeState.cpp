// SPDX-License-Identifier: Apache-2.0
#include "node/NodeState.h"

namespace tessera::node {

QString nodeStateName(NodeState state) {
    switch (state) {
    case NodeState::Starting: return QStringLiteral("Starting");
    case NodeState::Benchmarking: return QStringLiteral("Benchmarking");
    case NodeState::Admitting: return QStringLiteral("Admitting");
    case NodeState::Waitlisted: return QStringLiteral("Waitlisted");
    case NodeState::Downloading: return QStringLiteral("Downloading");
    case NodeState::Joining: return QStringLiteral("Joining");
    case NodeState::Working: return QStringLiteral("Working");
    case NodeState::Paused: return QStringLiteral("Paused");
    case NodeState::Stopping: return QStringLiteral("Stopping");
    }
    return QStringLiteral("Unknown");
}

bool transitionAllowed(NodeState from, NodeState to) {
    using S = NodeState;
    if (to == S::Stopping)
        return from != S::Stopping;
    switch (from) {
    case S::Starting: return to == S::Benchmarking;
    case S::Benchmarking: return to == S::Admitting;
    case S::Admitting: return to == S::Waitlisted || to == S::Downloading || to == S::Admitting;
    case S::Waitlisted: return to == S::Admitting;
    case S::Downloading: return to == S::Joining || to == S::Admitting;
    case S::Joining: return to == S::Working || to == S::Paused || to == S::Admitting || to == S::Downloading;
    case S::Working: return to == S::Paused || to == S::Admitting || to == S::Downloading;
    case S::Paused: return to == S::Working || to == S::Admitting || to == S::Downloading;
    case S::Stopping: return false;
    }
    return false;
}

} // namespace tessera::node
