// SPDX-License-Identifier: Apache-2.0
#pragma once
// Verifiers: who may run a check task again (trust/Reexecution, trust/ShareCheck).

#include "coordinator/router/Router.h"

#include <QString>
#include <QStringList>

#include <functional>

namespace tessera::coordinator {

// The replicas of `stage` that may verify a task its nodes ran in weights era `era`: they held the
// stage's weights then (joined before it) and were not asked yet (`tried`); those of a network none of
// `tried` is on come first (a liar's own network is the likeliest to collude), then the others.
QStringList verifierCandidates(const Router& router, int stage, qint64 era, const QStringList& tried,
                               const std::function<QString(const QString& node)>& networkOf);

} // namespace tessera::coordinator
