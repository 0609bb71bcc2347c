// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorRun: the training run a coordinator serves — its model and dataset
// (dataDir/run.json) and every stage's published shard — created on the first start and found
// again on each restart.
//
// First start: run.json is written (atomically), then the seeded initial shards go to
// dataDir/shards, their manifests are signed with the coordinator key and all stages' versions
// are recorded in one transaction. A restart that finds run.json but no stage versions (the
// first start died in between) writes the shards again; one that finds them checks they belong
// to this model and that their files are still there.

#include "base/ModelConfig.h"
#include "base/Result.h"

#include <QString>

#include <optional>

namespace tessera {
class Identity;
}

namespace tessera::coordinator {

class Database;

// What the command line may change of a preset or config file (a new run only).
struct ModelOverrides {
    std::optional<int> stages;
    std::optional<gpu::CodecKind> codec;
    std::optional<int> momentBits; // AdamW's moments in 32 or 8 bits (gpu::ModelConfig::momentBits)
    bool any() const { return stages || codec || momentBits; }
};

class CoordinatorRun final {
public:
    // model: a preset name ("tiny", "small", "8b") or a path to a config JSON; empty means the
    // run's own model, or tiny for a new run. A model or stage count that differs from the
    // run's is refused: a run's model never changes. dataset: a DatasetSpec; empty means the
    // run's own, or synthetic for a new run; one that differs from the run's is refused too.
    static Result<CoordinatorRun> openOrCreate(const QString& dataDir, Database& db,
                                               const Identity& coordinatorKey, const QString& model,
                                               const ModelOverrides& overrides, const QString& dataset,
                                               qint64 nowMs);

    // A preset name or a config JSON file, with the stage count overridden, validated.
    static Result<gpu::ModelConfig> resolveModel(const QString& model, const ModelOverrides& overrides);

    const gpu::ModelConfig& config() const { return m_config; }
    const QString& shardDir() const { return m_shardDir; }
    const QString& dataset() const { return m_dataset; } // normalised DatasetSpec text
    bool created() const { return m_created; }           // this start wrote the initial shards

private:
    CoordinatorRun(gpu::ModelConfig config, QString dataset, QString shardDir, bool created);
    Status createShards(Database& db, const Identity& coordinatorKey, qint64 nowMs);
    Result<bool> checkPublished(Database& db) const; // false: nothing published yet

    gpu::ModelConfig m_config;
    QString m_dataset;
    QString m_shardDir;
    bool m_created = false;
};

} // namespace tessera::coordinator
