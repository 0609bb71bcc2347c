// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorOptions: what tessera-coordinator is started with (its command line, parsed).

#include "base/ModelConfig.h"
#include "coordinator/training/Trainer.h"
#include "protocol/ClientVersion.h"

#include <QString>

#include <chrono>
#include <optional>

namespace tessera::coordinator {

struct CoordinatorOptions {
    QString dataDir;                                   // created on first start
    QString listen = QStringLiteral("127.0.0.1:8443"); // HOST:PORT, [v6]:PORT; port 0 picks one
    QString tlsCert;                                   // both or neither; neither: self-signed in dataDir
    QString tlsKey;
    bool insecureLoopback = false;       // plain HTTP, refused unless listen is loopback
    QString dbUrl;                       // empty: sqlite in dataDir (see Database::open)
    QString model;                       // preset name or CONFIG.json; empty: the run's, or tiny
    std::optional<int> stages;           // overrides the model's stage count
    std::optional<gpu::CodecKind> codec; // overrides the model's boundary codec
    std::optional<int> momentBits;       // overrides the model's optimizer moments (32 or 8 bits)
    QString dataset;                     // DatasetSpec; empty: the run's, or synthetic
    // A node without a heartbeat for this long is offline (tests shorten it).
    std::chrono::milliseconds heartbeatTimeout{std::chrono::seconds(30)};

    // Admission limits (AssignmentSettings, AdmissionSettings); 0 nodes means no limit.
    int maxNodes = 0;
    int maxNodesPerStage = 0;
    std::chrono::seconds waitlistRetryAfter{300};
    protocol::ClientVersion minClientVersion = protocol::kOldestCompatibleClient;
    // HTTP limits (HttpServerConfig); unset: the server's own defaults.
    std::optional<int> maxConnections;
    std::optional<std::chrono::milliseconds> requestTimeout; // header block and body deadlines
    std::optional<int> maxConnectionsPerAddress;             // 0: no limit
    std::optional<qint64> maxBytesInFlight;                  // 0: no limit
    // POST /v1/admission/challenge and POST /v1/admission, each, per address per minute; 0: no limit.
    int maxAdmissionsPerAddress = 60;

    // The data plane: microbatch shape, global batch, window, averaging, checkpoints, credits.
    TrainerSettings training;
};

} // namespace tessera::coordinator
