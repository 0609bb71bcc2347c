// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageVersionStore: the published versions (checkpoints) of each stage shard.

#include "base/Result.h"

#include <QString>

#include <optional>

namespace tessera::coordinator {

class Database;

struct StageVersion {
    int stage = 0;
    qint64 version = 0;
    qint64 step = 0; // training step the weights are from
    QString file;    // the shard file, relative to the coordinator's shard directory
    qint64 fileSize = 0;
    QString sha256; // hex, of the whole file
    QString manifestJson;
    qint64 createdAtMs = 0;
};

class StageVersionStore final {
public:
    explicit StageVersionStore(Database& db)
        : m_db(db) {}

    // A (stage, version) is published once: adding it again fails.
    Status add(const StageVersion& v);
    // The newest version not refused; `below`: the newest older than it.
    Result<std::optional<StageVersion>> latest(int stage, std::optional<qint64> below = std::nullopt);
    Result<std::optional<StageVersion>> find(int stage, qint64 version); // not refused
    // The version's file was found damaged: never loaded or offered again.
    Status refuse(int stage, qint64 version, const QString& reason);
    Result<qint64> highestVersion(int stage); // refused ones included: numbers are not used again

private:
    Database& m_db;
};

} // namespace tessera::coordinator
