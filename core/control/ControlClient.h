// SPDX-License-Identifier: Apache-2.0
#pragma once
// ControlClient: one synchronous request to the node running on a data directory (for the CLI).

#include "base/Result.h"
#include "protocol/ControlMessages.h"

#include <QJsonObject>
#include <QString>

namespace tessera::node {

class ControlClient final {
public:
    // Sends `command` with the data directory's control token and waits for the answer, at most
    // `timeoutMs` in all. Returns the reply (its "ok" included); a refusal's error text, or
    // "no tessera-node is running on DIR" when nothing listens. Blocks the calling thread: the
    // server must not run on it.
    static Result<QJsonObject> call(const QString& dataDir, const protocol::ControlRequest& request,
                                    int timeoutMs = 5000);
};

} // namespace tessera::node
