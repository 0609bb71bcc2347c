// SPDX-License-Identifier: Apache-2.0
#include "coordinator/CoordinatorRun.h"

#include "common/Identity.h"
#include "coordinator/DatasetSpec.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/StageVersionStore.h"
#include "protocol/ManifestSignature.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

namespace tessera::coordinator {

namespace {

const QString kRunFile = QStringLiteral("run.json");

std::string str(const QString& s) {
    return s.toStdString();
}

Result<QByteArray> readFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return makeError("cannot read " + str(path) + ": " + str(f.errorString()));
    return f.readAll();
}

Status writeFileAtomically(const QString& path, const QByteArray& bytes) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.flush() || !f.commit())
        return makeError("cannot write " + str(path) + ": " + str(f.errorString()));
    return {};
}

// run.json: {"model": <ModelConfig JSON>, "dataset": "<spec>"}.
QByteArray runJson(const gpu::ModelConfig& config, const QString& dataset) {
    QJsonObject run;
    run.insert(QStringLiteral("model"),
               QJsonDocument::fromJson(QByteArray::fromStdString(config.toJson())).object());
    run.insert(QStringLiteral("dataset"), dataset);
    return QJsonDocument(run).toJson();
}

struct StoredRun {
    gpu::ModelConfig config;
    QString dataset;
};

Result<StoredRun> parseRunJson(const QString& path, const QByteArray& text) {
    const QJsonObject run = QJsonDocument::fromJson(text).object();
    // Runs made before --dataset hold the bare model config, and trained on synthetic data.
    const bool bare = !run.contains(u"model");
    const QByteArray model = bare ? text : QJsonDocument(run.value(u"model").toObject()).toJson();
    Result<gpu::ModelConfig> config = gpu::ModelConfig::fromJson(model.toStdString());
    if (!config)
        return makeError(str(path) + ": " + config.message());
    const QJsonValue dataset = run.value(u"dataset");
    if (!bare && (!dataset.isString() || dataset.toString().isEmpty()))
        return makeError(str(path) + ": dataset: missing or not a string");
    return StoredRun{*config, bare ? DatasetSpec::defaultSpec() : dataset.toString()};
}

} // namespace

CoordinatorRun::CoordinatorRun(gpu::ModelConfig config, QString dataset, QString shardDir, bool needsShards)
    : m_config(std::move(config))
    , m_dataset(std::move(dataset))
    , m_shardDir(std::move(shardDir))
    , m_needsShards(needsShards) {}

Result<gpu::ModelConfig> CoordinatorRun::resolveModel(const QString& model, const ModelOverrides& overrides) {
    Result<gpu::ModelConfig> config = makeError("");
    // A preset name never contains a dot or a slash; anything else is a config file.
    if (!model.contains(u'.') && !model.contains(u'/')) {
        config = gpu::ModelConfig::preset(str(model));
        if (!config)
            return makeError("--model " + str(model) + ": " + config.message() +
                             " (give a preset name: tiny, small, 8b, or a config JSON file)");
    } else {
        Result<QByteArray> text = readFile(model);
        if (!text)
            return makeError("--model: " + text.message());
        config = gpu::ModelConfig::fromJson(text->toStdString());
        if (!config)
            return makeError("--model " + str(model) + ": " + config.message());
    }
    if (overrides.stages)
        config->stages = *overrides.stages;
    if (overrides.codec)
        config->codec = *overrides.codec;
    if (overrides.momentBits)
        config->momentBits = *overrides.momentBits;
    if (Status valid = config->validate(); !valid)
        return makeError("the model: " + valid.message());
    return config;
}

Result<CoordinatorRun> CoordinatorRun::openOrCreate(const QString& dataDir, Database& db,
                                                    const QString& model, const ModelOverrides& overrides,
                                                    const QString& dataset) {
    const QString runPath = QDir(dataDir).filePath(kRunFile);
    const QString shardDir = QDir(dataDir).filePath(QStringLiteral("shards"));
    std::optional<DatasetSpec> requestedDataset;
    if (!dataset.isEmpty()) {
        Result<DatasetSpec> parsed = DatasetSpec::parse(dataset);
        if (!parsed)
            return parsed.error();
        requestedDataset = *parsed;
    }
    if (!QFileInfo::exists(runPath)) {
        Result<gpu::ModelConfig> config =
            resolveModel(model.isEmpty() ? QStringLiteral("tiny") : model, overrides);
        if (!config)
            return config.error();
        const QString data = requestedDataset ? requestedDataset->text() : DatasetSpec::defaultSpec();
        if (Status w = writeFileAtomically(runPath, runJson(*config, data)); !w)
            return w.error();
        return CoordinatorRun(*config, data, shardDir, true);
    }

    Result<QByteArray> text = readFile(runPath);
    if (!text)
        return text.error();
    Result<StoredRun> storedRun = parseRunJson(runPath, *text);
    if (!storedRun)
        return storedRun.error();
    const gpu::ModelConfig* stored = &storedRun->config;
    if (requestedDataset && requestedDataset->text() != storedRun->dataset)
        return makeError("this data dir holds a run trained on --dataset " + str(storedRun->dataset) +
                         ", which --dataset would change to " + str(requestedDataset->text()) +
                         ". A run's dataset never changes: omit --dataset to resume it, or give another "
                         "--data-dir for a new run");
    if (!model.isEmpty() || overrides.any()) {
        // Only --stages or --codec given: compared against the run's own model.
        Result<gpu::ModelConfig> requested = *stored;
        if (!model.isEmpty()) {
            requested = resolveModel(model, overrides);
        } else {
            if (overrides.stages)
                requested->stages = *overrides.stages;
            if (overrides.codec)
                requested->codec = *overrides.codec;
            if (overrides.momentBits)
                requested->momentBits = *overrides.momentBits;
        }
        if (!requested)
            return requested.error();
        if (requested->toJson() != stored->toJson())
            return makeError("this data dir holds a run of model '" + stored->name + "' with " +
                             std::to_string(stored->stages) + " stages (config hash " +
                             stored->hash().substr(0, 12) +
                             "), which --model/--stages/--codec/--moment-bits would change to '" +
                             requested->name + "' with " + std::to_string(requested->stages) + " stages (" +
                             requested->hash().substr(0, 12) +
                             "). A run's model never changes: omit --model, --stages, --codec and "
                             "--moment-bits to resume it, or give "
                             "another --data-dir for a new run");
    }

    CoordinatorRun run(*stored, storedRun->dataset, shardDir, false);
    Result<bool> published = run.checkPublished(db);
    if (!published)
        return published.error();
    run.m_needsShards = !*published;
    return run;
}

Status CoordinatorRun::publishInitialShards(Database& db, const Identity& coordinatorKey,
                                            std::vector<gpu::ShardManifest> manifests, qint64 nowMs) {
    if (manifests.size() != std::size_t(m_config.stages))
        return makeError("the initial shards: " + std::to_string(manifests.size()) + " manifests for " +
                         std::to_string(m_config.stages) + " stages");
    Status recorded = db.writeTransaction([&]() -> Status {
        StageVersionStore store(db);
        for (gpu::ShardManifest& m : manifests) {
            protocol::signManifest(m, coordinatorKey);
            StageVersion v;
            v.stage = int(m.stage);
            v.version = m.version;
            v.step = m.step;
            v.file = QString::fromStdString(m.file);
            v.fileSize = qint64(m.fileSize);
            v.sha256 = QString::fromStdString(m.sha256);
            v.manifestJson = QString::fromStdString(m.toJson());
            v.createdAtMs = nowMs;
            if (Status s = store.add(v); !s)
                return s;
        }
        return {};
    });
    if (recorded)
        m_needsShards = false;
    return recorded;
}

Result<bool> CoordinatorRun::checkPublished(Database& db) const {
    StageVersionStore store(db);
    const std::string hash = m_config.hash();
    int found = 0;
    for (int stage = 0; stage < m_config.stages; ++stage) {
        Result<std::optional<StageVersion>> latest = store.latest(stage);
        if (!latest)
            return latest.error();
        if (!*latest)
            continue;
        ++found;
        const StageVersion& v = **latest;
        Result<gpu::ShardManifest> m = gpu::ShardManifest::fromJson(v.manifestJson.toStdString());
        if (!m)
            return makeError("stage " + std::to_string(stage) + "'s stored manifest: " + m.message());
        if (m->modelConfigHash != hash)
            return makeError("the database " + str(db.displayName()) +
                             " holds shards of another model (config hash " +
                             m->modelConfigHash.substr(0, 12) + ", run.json's is " + hash.substr(0, 12) +
                             "): give this run its own --db");
        // Its file is checked when the checkpoints load (a damaged one is refused, the one before used).
    }
    if (found != 0 && found != m_config.stages)
        return makeError("the database has shards for " + std::to_string(found) + " of " +
                         std::to_string(m_config.stages) + " stages; it does not belong to this run");
    return found != 0;
}

} // namespace tessera::coordinator
