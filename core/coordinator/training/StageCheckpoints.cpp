// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/StageCheckpoints.h"

#include "common/Identity.h"
#include "common/WallClock.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/StageVersionStore.h"
#include "coordinator/training/CheckpointOpening.h"
#include "protocol/ManifestSignature.h"
#include "shard/InitialShards.h"
#include "train/StageCheckpointFile.h"

#include <QDir>
#include <QFile>

namespace tessera::coordinator {

struct StageCheckpoints::Stage {
    std::unique_ptr<gpu::StageCheckpointFile> file;
    qint64 version = 0; // loaded or last published
    qint64 highest = 0; // the highest number recorded, refused versions included
    qint64 step = 0;
    bool changed = false;
};

StageCheckpoints::StageCheckpoints(Database& db, const Identity& key, QString shardDir)
    : m_db(db)
    , m_key(key)
    , m_shardDir(std::move(shardDir)) {}

StageCheckpoints::~StageCheckpoints() = default;

Result<std::unique_ptr<StageCheckpoints>> StageCheckpoints::adopt(Database& db, const Identity& key,
                                                                  const QString& shardDir,
                                                                  std::vector<Loaded> stages) {
    std::unique_ptr<StageCheckpoints> c(new StageCheckpoints(db, key, shardDir));
    StageVersionStore store(db);
    std::vector<int> fellBack;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        Result<qint64> highest = store.highestVersion(int(s));
        if (!highest)
            return highest.error();
        auto stage = std::make_unique<Stage>();
        stage->file = std::move(stages[s].file);
        stage->version = stages[s].version;
        stage->highest = *highest;
        stage->step = stages[s].step;
        if (stage->highest > stage->version)
            fellBack.push_back(int(s));
        c->m_stages.push_back(std::move(stage));
    }
    // What was used instead is published again under a new number at once: a node holding the
    // damaged version is never offered an older one (it would refuse a rollback).
    for (int s : fellBack)
        if (Status published = c->publishStage(s, c->step(s), WallClock::nowMs(), 3); !published)
            return published.error();
    return c;
}

int StageCheckpoints::stages() const {
    return int(m_stages.size());
}

qint64 StageCheckpoints::parameters(int stage) const {
    return m_stages.at(std::size_t(stage))->file->parameterCount();
}

qint64 StageCheckpoints::partitionSize(int stage, int partition, int partitions) const {
    if (stage < 0 || stage >= stages())
        return 0;
    Result<std::int64_t> n = m_stages[std::size_t(stage)]->file->partitionSize(partition, partitions);
    return n ? *n : 0;
}

qint64 StageCheckpoints::version(int stage) const {
    return m_stages.at(std::size_t(stage))->version;
}

qint64 StageCheckpoints::step(int stage) const {
    return m_stages.at(std::size_t(stage))->step;
}

bool StageCheckpoints::changed(int stage) const {
    return m_stages.at(std::size_t(stage))->changed;
}

Result<std::vector<float>> StageCheckpoints::values(int stage, int partition, int partitions) const {
    if (stage < 0 || stage >= stages())
        return makeError("no stage " + std::to_string(stage));
    return m_stages[std::size_t(stage)]->file->gatherPartition(partition, partitions);
}

Result<std::vector<float>> StageCheckpoints::weights(int stage, qint64 offset, qint64 count) const {
    if (stage < 0 || stage >= stages())
        return makeError("no stage " + std::to_string(stage));
    return m_stages[std::size_t(stage)]->file->readRange(offset, count);
}

Result<std::vector<float>> StageCheckpoints::state(int stage, qint64 offset, qint64 count) const {
    if (stage < 0 || stage >= stages())
        return makeError("no stage " + std::to_string(stage));
    return m_stages[std::size_t(stage)]->file->readStateRange(offset, count);
}

qint64 StageCheckpoints::optimizerSteps(int stage) const {
    return stage >= 0 && stage < stages() ? m_stages[std::size_t(stage)]->file->steps() : 0;
}

bool StageCheckpoints::stateSync() const {
    return !m_stages.empty() && m_stages.front()->file->stateSync();
}

Status StageCheckpoints::take(int stage, int partition, int partitions, std::span<const float> values) {
    if (stage < 0 || stage >= stages())
        return makeError("no stage " + std::to_string(stage));
    Stage& s = *m_stages[std::size_t(stage)];
    if (Status set = s.file->setPartition(partition, partitions, values); !set)
        return set;
    s.changed = true;
    return {};
}

std::vector<std::vector<std::int64_t>> StageCheckpoints::parameterShapes(int stage) const {
    if (stage < 0 || stage >= stages())
        return {};
    return m_stages[std::size_t(stage)]->file->parameterShapes();
}

Status StageCheckpoints::applyGradients(int stage, int rank, std::span<const float> result,
                                        double learningRate, double clipScale,
                                        gpu::WeightFingerprint* fingerprint) {
    if (stage < 0 || stage >= stages())
        return makeError("no stage " + std::to_string(stage));
    Stage& s = *m_stages[std::size_t(stage)];
    if (Status applied = s.file->applyGradients(rank, result, learningRate, clipScale, fingerprint); !applied)
        return applied;
    s.changed = true;
    return {};
}

Result<int> StageCheckpoints::publish(qint64 step, qint64 nowMs, int keep) {
    int published = 0;
    for (int i = 0; i < stages(); ++i) {
        if (!m_stages[std::size_t(i)]->changed)
            continue;
        if (Status s = publishStage(i, step, nowMs, keep); !s)
            return s.error();
        ++published;
    }
    return published;
}

Status StageCheckpoints::publishStage(int i, qint64 step, qint64 nowMs, int keep) {
    Stage& s = *m_stages[std::size_t(i)];
    // Above every number used, refused ones included.
    const qint64 version = std::max(s.version, s.highest) + 1;
    const QString name = QString::fromStdString(gpu::stageShardFileName(i, version));
    const QString path = QDir(m_shardDir).filePath(name);
    Result<gpu::ShardManifest> manifest = s.file->save(path.toStdString(), version, step);
    if (!manifest)
        return makeError("writing the checkpoint of stage " + std::to_string(i) + ": " + manifest.message());
    manifest->file = name.toStdString();
    protocol::signManifest(*manifest, m_key);
    StageVersion v;
    v.stage = i;
    v.version = version;
    v.step = step;
    v.file = name;
    v.fileSize = qint64(manifest->fileSize);
    v.sha256 = QString::fromStdString(manifest->sha256);
    v.manifestJson = QString::fromStdString(manifest->toJson());
    v.createdAtMs = nowMs;
    if (Status added = StageVersionStore(m_db).add(v); !added) {
        QFile::remove(path);
        return makeError("recording the checkpoint of stage " + std::to_string(i) + ": " + added.message());
    }
    s.version = version;
    s.highest = version;
    s.step = step;
    s.changed = false;
    // The newest versions stay downloadable; older files go (their rows stay, for history).
    for (qint64 old = version - keep; old >= 1; --old) {
        const QString oldPath =
            QDir(m_shardDir).filePath(QString::fromStdString(gpu::stageShardFileName(i, old)));
        if (!QFile::exists(oldPath))
            break;
        QFile::remove(oldPath);
    }
    return {};
}

} // namespace tessera::coordinator
