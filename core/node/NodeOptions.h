// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeOptions: what `tessera-node run` is started with (its command line, parsed).

#include "protocol/PublicProfile.h"

#include <QString>
#include <QUrl>

#include <chrono>

namespace tessera::node {

struct NodeOptions {
    QUrl coordinator;         // https://host:port (http:// only to loopback)
    QString dataDir;          // one per GPU; default NodeFiles::defaultDataDir()
    QString device = QStringLiteral("cpu"); // "cpu" or "cuda:N"
    double computeLimit = 0.7; // --gpu-limit PCT / 100: share of wall time spent computing
    QString coordinatorKey;   // --coordinator-key: base64url; empty: pinned on first use
    QString coordinatorCa;    // --coordinator-ca: extra trusted certificate(s), PEM
    qint64 maxDownloadBytesPerSecond = 0; // --max-download-rate; 0: unlimited
    double benchSeconds = 3;  // the admission benchmark's budget
    std::chrono::milliseconds heartbeatInterval{std::chrono::seconds(10)};
    std::chrono::milliseconds creditsPollInterval{std::chrono::seconds(60)};
    protocol::PublicProfile profile; // --display-name, --team: on the leaderboard; empty: anonymous
};

} // namespace tessera::node
