// SPDX-License-Identifier: Apache-2.0
// Verifiers: replicas that held the weights, another network first.
#include "coordinator/trust/Verifiers.h"

#include <QSet>

#include <algorithm>

namespace tessera::coordinator {

QStringList verifierCandidates(const Router& router, int stage, qint64 era, const QStringList& tried,
                               const std::function<QString(const QString& node)>& networkOf) {
    QStringList candidates;
    for (const QString& node : router.nodesOf(stage))
        if (!tried.contains(node) && router.mayVerify(node, era))
            candidates << node;
    QSet<QString> networks;
    for (const QString& node : tried)
        networks.insert(networkOf(node));
    std::stable_partition(candidates.begin(), candidates.end(),
                          [&](const QString& node) { return !networks.contains(networkOf(node)); });
    return candidates;
}

} // namespace tessera::coordinator
