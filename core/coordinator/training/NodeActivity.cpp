// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/NodeActivity.h"

namespace tessera::coordinator {

QString nodeActivityName(NodeActivity activity) {
    switch (activity) {
    case NodeActivity::Waiting:
        return QStringLiteral("waiting");
    case NodeActivity::Syncing:
        return QStringLiteral("syncing");
    case NodeActivity::Training:
        return QStringLiteral("training");
    case NodeActivity::Moving:
        return QStringLiteral("moving");
    case NodeActivity::Paused:
        return QStringLiteral("paused");
    }
    return QStringLiteral("waiting");
}

} // namespace tessera::coordinator
