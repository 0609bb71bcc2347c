// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorRun: the training run a coordinator serves — its model and dataset
// (dataDir/run.json) and every stage's published shard — created on the first start and found
// again on each restart.
//
// First start: run.json is written (atomically) and the run is opened *unpublished*
// (needsInitialShards): its seeded initial shards are written to dataDir/shards afterwards, on a
// worker thread (RunPreparation), and publishInitialShards then signs their manifests with the
// coordinator key and records all stages' versions in one transaction. A restart that finds
// run.json but no stage versions (the first start was stopped or died in between) is unpublished
// again and writes the shards again; one that finds them checks they belong to this model.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/ShardManifest.h"

#include <QString>

#include <optional>
#include <vector>

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
    static constexpr qint64 kInitialVersion = 1; // the version the initial shards are published as

    // model: a preset name ("tiny", "small", "8b") or a path to a config JSON; empty means the
    // run's own model, or tiny for a new run. A model or stage count that differs from the
    // run's is refused: a run's model never changes. dataset: a DatasetSpec; empty means the
    // run's own, or synthetic for a new run; one that differs from the run's is refused too.
    // Writes no shard: see needsInitialShards.
    static Result<CoordinatorRun> openOrCreate(const QString& dataDir, Database& db, const QString& model,
                                               const ModelOverrides& overrides, const QString& dataset);

    // A preset name or a config JSON file, with the stage count overridden, validated.
    static Result<gpu::ModelConfig> resolveModel(const QString& model, const ModelOverrides& overrides);

    const gpu::ModelConfig& config() const { return m_config; }
    const QString& shardDir() const { return m_shardDir; }
    const QString& dataset() const { return m_dataset; } // normalised DatasetSpec text
    // No stage version is recorded yet: gpu::writeInitialShards(config(), shardDir(),
    // kInitialVersion) must run, then publishInitialShards.
    bool needsInitialShards() const { return m_needsShards; }

    // Signs the written shards' manifests and records every stage's version in one transaction.
    Status publishInitialShards(Database& db, const Identity& coordinatorKey,
                                std::vector<gpu::ShardManifest> manifests, qint64 nowMs);

private:
    CoordinatorRun(gpu::ModelConfig config, QString dataset, QString shardDir, bool needsShards);
    Result<bool> checkPublished(Database& db) const; // false: nothing published yet

    gpu::ModelConfig m_config;
    QString m_dataset;
    QString m_shardDir;
    bool m_needsShards = false;
};

} // namespace tessera::coordinator
