// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/NodeMessageCap.h"

#include "protocol/TaskMessage.h"

#include <algorithm>

namespace tessera::coordinator {

qint64 largestNodeMessage(const gpu::ModelConfig& model, qint64 tokens) {
    qint64 parameters = 0;
    for (int stage = 0; stage < model.stages; ++stage)
        parameters = std::max<qint64>(parameters, model.stageParameterCount(stage));
    const qint64 payload = std::max(parameters, tokens * model.dModel) * qint64(sizeof(float));
    const qint64 envelope = protocol::kTaskMessageMaxJsonBytes + 64 * 1024; // header, frame headers
    return std::min<qint64>(payload + payload / 4 + envelope, protocol::kTaskMessageMaxBytes);
}

} // namespace tessera::coordinator
