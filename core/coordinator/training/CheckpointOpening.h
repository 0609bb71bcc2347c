// SPDX-License-Identifier: Apache-2.0
#pragma once
// CheckpointOpening: what a coordinator does before it serves a run that has published weights —
// every stage's newest published checkpoint read and verified against its manifest (32 GB at 8b,
// over a minute) — split so that the reading runs on a worker thread while the coordinator already
// answers (RunPreparation):
//   next(db)          the database's thread: records what the last read refused (never offered
//                     again) and names the versions to try, newest first, for every stage still
//                     without one; an error when a stage has none left
//   read()            any thread, the files only: tries them until one per stage verifies
//   finish(db, key)   the database's thread: the StageCheckpoints (a version used in place of a
//                     damaged newer one is published anew)
// Each stage's latest published version is used; a damaged one is refused (recorded, never offered
// again) and the version before it used and published anew.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "coordinator/store/StageVersionStore.h"

#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
class Identity;
}
namespace tessera::gpu {
class StageCheckpointFile;
}

namespace tessera::coordinator {

class Database;
class StageCheckpoints;

class CheckpointOpening final {
public:
    CheckpointOpening(gpu::ModelConfig config, QString shardDir);
    ~CheckpointOpening();
    CheckpointOpening(CheckpointOpening&&) noexcept;

    // True when a read() is needed (some stage has versions to try), false when every stage has
    // its checkpoint.
    Result<bool> next(Database& db);
    // `afterChunk` is told the bytes verified so far in this read, across the files; an error it
    // returns stops the read with that error (nothing is recorded for the versions not finished).
    Status read(const std::function<Status(std::uint64_t bytesVerified)>& afterChunk = {});
    // What the read will take when no file is damaged: the newest candidate's size, every stage.
    std::uint64_t bytesToRead() const;
    Result<std::unique_ptr<StageCheckpoints>> finish(Database& db, const Identity& key);

private:
    struct Stage {
        std::vector<StageVersion> candidates;                // newest first
        std::optional<qint64> below;                         // the oldest version named so far
        std::vector<std::pair<qint64, std::string>> refused; // by the last read: version, why
        std::string damaged;                                 // every refusal, for the error
        std::unique_ptr<gpu::StageCheckpointFile> file;
        StageVersion loaded;
    };
    gpu::ModelConfig m_config;
    QString m_shardDir;
    std::vector<Stage> m_stages;
};

} // namespace tessera::coordinator
