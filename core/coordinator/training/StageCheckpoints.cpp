#include "coordinator/training/StageCheckpoints.h"

#include "common/Identity.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/StageVersionStore.h"
#include "engine/StageEngine.h"
#include "protocol/ManifestSignature.h"
#include "shard/InitialShards.h"

#include <QDir>
#include <QFile>

namespace tessera::coordinator {

struct StageCheckpoints::Stage {
    std::unique_ptr<gpu::StageEngine> engine;
    qint64 version = 0;
    qint64 step = 0;
    bool changed = false;
};

StageCheckpoints::StageCheckpoints(Database& db, const Identity& key, QString shardDir)
    : m_db(db)
    , m_key(key)
    , m_shardDir(std::move(shardDir)) {}

StageCheckpoints::~StageCheckpoints() = default;

Result<std::unique_ptr<StageCheckpoints>> StageCheckpoints::open(Database& db, const Identity& key,
                                                                 const gpu::ModelConfig& config,
                                                                 const QString& shardDir) {
    std::unique_ptr<StageCheckpoints> c(new StageCheckpoints(db, key, shardDir));
    StageVersionStore store(db);
    for (int s = 0; s < config.stages; ++s) {
        Result<std::optional<StageVersion>> latest = store.latest(s);
        if (!latest)
            return latest.error();
        if (!*latest)
            return makeError("stage " + std::to_string(s) + " has no published version");
        gpu::StageEngineOptions options;
        options.config = config;
        options.stage = s;
        options.device = "cpu";
        options.keepActivations = false;
        Result<std::unique_ptr<gpu::StageEngine>> engine = gpu::StageEngine::create(options);
        if (!engine)
            return makeError("the checkpoint of stage " + std::to_string(s) + ": " + engine.message());
        Result<gpu::ShardManifest> manifest =
            gpu::ShardManifest::fromJson((*latest)->manifestJson.toStdString());
        if (!manifest)
            return makeError("the manifest of stage " + std::to_string(s) + ": " + manifest.message());
        const QString file = QDir(shardDir).filePath((*latest)->file);
        if (Status loaded = (*engine)->loadShard(file.toStdString(), *manifest); !loaded)
            return makeError("loading the checkpoint of stage " + std::to_string(s) + " (" +
                             file.toStdString() + "): " + loaded.message());
        auto stage = std::make_unique<Stage>();
        stage->engine = std::move(*engine);
        stage->version = (*latest)->version;
        stage->step = (*latest)->step;
        c->m_stages.push_back(std::move(stage));
    }
    return c;
}

int StageCheckpoints::stages() const {
    return int(m_stages.size());
}

qint64 StageCheckpoints::parameters(int stage) const {
    return m_stages.at(std::size_t(stage))->engine->parameterCount();
}

qint64 StageCheckpoints::partitionSize(int stage, int partition, int partitions) const {
    if (stage < 0 || stage >= stages())
        return 0;
    Result<std::int64_t> n = m_stages[std::size_t(stage)]->engine->partitionSize(partition, partitions);
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
    return m_stages[std::size_t(stage)]->engine->gatherPartition(partition, partitions);
}

Status StageCheckpoints::take(int stage, int partition, int partitions, std::span<const float> values) {
    if (stage < 0 || stage >= stages())
        return makeError("no stage " + std::to_string(stage));
    Stage& s = *m_stages[std::size_t(stage)];
    if (Status set = s.engine->setPartition(partition, partitions, values); !set)
        return set;
    s.changed = true;
    return {};
}

std::vector<std::vector<std::int64_t>> StageCheckpoints::parameterShapes(int stage) const {
    if (stage < 0 || stage >= stages())
        return {};
    return m_stages[std::size_t(stage)]->engine->parameterShapes();
}

Status StageCheckpoints::applyGradients(int stage, int rank, std::span<const float> result, qint64 round,
                                        double learningRate, double clipScale) {
    if (stage < 0 || stage >= stages())
        return makeError("no stage " + std::to_string(stage));
    Stage& s = *m_stages[std::size_t(stage)];
    if (Status applied = s.engine->applyGradients(rank, result, true, round, learningRate, clipScale);
        !applied)
        return applied;
    s.changed = true;
    return {};
}

Result<int> StageCheckpoints::publish(qint64 step, qint64 nowMs, int keep) {
    int published = 0;
    for (int i = 0; i < stages(); ++i) {
        Stage& s = *m_stages[std::size_t(i)];
        if (!s.changed)
            continue;
        const qint64 version = s.version + 1;
        const QString name = QString::fromStdString(gpu::stageShardFileName(i, version));
        const QString path = QDir(m_shardDir).filePath(name);
        Result<gpu::ShardManifest> manifest = s.engine->saveShard(path.toStdString(), version, step);
        if (!manifest)
            return makeError("writing the checkpoint of stage " + std::to_string(i) + ": " +
                             manifest.message());
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
            return makeError("recording the checkpoint of stage " + std::to_string(i) + ": " +
                             added.message());
        }
        s.version = version;
        s.step = step;
        s.changed = false;
        ++published;
        // The newest versions stay downloadable; older files go (their rows stay, for history).
        for (qint64 old = version - keep; old >= 1; --old) {
            const QString oldPath =
                QDir(m_shardDir).filePath(QString::fromStdString(gpu::stageShardFileName(i, old)));
            if (!QFile::exists(oldPath))
                break;
            QFile::remove(oldPath);
        }
    }
    return published;
}

} // namespace tessera::coordinator
