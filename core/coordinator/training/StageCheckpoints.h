// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageCheckpoints: the coordinator's own copy of every stage's weights — refreshed by each
// averaging round (the averaged partition replaces its values) and by each joining node's sync
// (all the weights of a live replica) — persisted every so many steps as a new stage version:
// written atomically, manifest signed, recorded in stage_versions. New nodes download the
// latest version; a restarted coordinator starts from it.
//
// Each stage lives on disk (gpu::StageCheckpointFile: the published shard, a working copy of the
// weights once they change, AdamW's moments), read and changed a chunk at a time: the coordinator's
// memory does not grow with the model (an 8b run's stages are 32 GB of fp32 weights).

#include "base/ModelConfig.h"
#include "base/Result.h"

#include <QString>

#include <memory>
#include <span>
#include <vector>

namespace tessera {
class Identity;
}
namespace tessera::gpu {
class StageCheckpointFile;
class WeightFingerprint;
}

namespace tessera::coordinator {

class Database;

class StageCheckpoints final {
public:
    // Every stage's verified file, in stage order, and the published version it is.
    struct Loaded {
        std::unique_ptr<gpu::StageCheckpointFile> file;
        qint64 version = 0;
        qint64 step = 0;
    };
    // What CheckpointOpening found: a stage whose newer versions were refused publishes its
    // loaded one anew, so a node holding a damaged version is never offered an older one.
    static Result<std::unique_ptr<StageCheckpoints>>
    adopt(Database& db, const Identity& key, const QString& shardDir, std::vector<Loaded> stages);
    ~StageCheckpoints();

    int stages() const;
    qint64 parameters(int stage) const;
    qint64 partitionSize(int stage, int partition, int partitions) const; // -1: all; 0 when invalid
    qint64 version(int stage) const;                                      // latest published
    qint64 step(int stage) const; // the step of the latest published version

    // The checkpoint's values of a partition (-1: all of them, in SPARTA's order: a reclaim's reference).
    Result<std::vector<float>> values(int stage, int partition, int partitions) const;
    // Weights [offset, offset + count) of a stage in parameter order (a ghost sync's chunk).
    Result<std::vector<float>> weights(int stage, qint64 offset, qint64 count) const;
    // The stage's state [offset, offset + count): AdamW's first and second moments, then its weights
    // (3 × parameters(stage) values, gpu::StateRegion's order): what a ghost sync sends, so the
    // ghost holds what the replicas hold. Needs 32-bit moments (stateSync).
    Result<std::vector<float>> state(int stage, qint64 offset, qint64 count) const;
    qint64 optimizerSteps(int stage) const;
    bool stateSync() const;
    // The partition's values replace the checkpoint's (partition -1: all of them).
    Status take(int stage, int partition, int partitions, std::span<const float> values);
    bool changed(int stage) const; // since the last publish
    // The stage's parameter shapes, in the gradient exchange's order.
    std::vector<std::vector<std::int64_t>> parameterShapes(int stage) const;
    // A step's averaged gradient applied as every replica applies it (the same AdamW step): the
    // checkpoint holds what the replicas hold, for joiners and for a restart. fingerprint: the
    // updated weights added to it, in the same pass (WeightCheck's reference).
    Status applyGradients(int stage, int rank, std::span<const float> result, double learningRate,
                          double clipScale, gpu::WeightFingerprint* fingerprint = nullptr);

    // Publishes a new version of every changed stage at `step`: returns how many. Old files
    // beyond the newest `keep` versions of a stage are deleted (their rows stay, for history).
    Result<int> publish(qint64 step, qint64 nowMs, int keep = 3);

private:
    struct Stage;
    Status publishStage(int stage, qint64 step, qint64 nowMs, int keep);
    StageCheckpoints(Database& db, const Identity& key, QString shardDir);
    Database& m_db;
    const Identity& m_key;
    QString m_shardDir;
    std::vector<std::unique_ptr<Stage>> m_stages;
};

} // namespace tessera::coordinator
