// SPDX-License-Identifier: Apache-2.0
#include "node/shard/ManifestVersions.h"

#include <QCryptographicHash>
#include <QJsonObject>

namespace tessera::node {

namespace {

QString runOf(const gpu::ShardManifest& manifest, const QByteArray& coordinatorKey) {
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(coordinatorKey);
    hash.addData(QByteArrayView(manifest.modelConfigHash.data(), qsizetype(manifest.modelConfigHash.size())));
    return QString::fromLatin1(hash.result().toHex());
}

} // namespace

Status ManifestVersions::accept(const gpu::ShardManifest& manifest, const QByteArray& coordinatorKey) const {
    const QString run = runOf(manifest, coordinatorKey);
    const QString stage = QString::number(manifest.stage);
    const QString sha256 = QString::fromStdString(manifest.sha256);
    Result<QJsonObject> record = m_files.read(fileName());
    if (!record) // unreadable: the floor is lost, say so, start again from this manifest
        qWarning("node: %s; the shard version record starts again", record.message().c_str());
    QJsonObject stages;
    if (record && record->value(u"run").toString() == run)
        stages = record->value(u"stages").toObject();
    const QJsonObject stored = stages.value(stage).toObject();
    if (!stored.isEmpty()) {
        const qint64 version = stored.value(u"version").toInteger(-1);
        if (manifest.version < version)
            return makeError("the coordinator offered version " + std::to_string(manifest.version) +
                             " of stage " + std::to_string(manifest.stage) + ", older than version " +
                             std::to_string(version) +
                             " this node already accepted for this run; refusing to roll the weights back "
                             "(if the operator restored an older checkpoint on purpose, remove " +
                             m_files.path(fileName()).toStdString() + ")");
        if (manifest.version == version && stored.value(u"sha256").toString() != sha256)
            return makeError("the coordinator signed two different shards as version " +
                             std::to_string(manifest.version) + " of stage " +
                             std::to_string(manifest.stage) + "; refusing the second (sha256 " +
                             manifest.sha256 + ")");
        if (manifest.version == version)
            return {};
    }
    stages.insert(stage, QJsonObject{{QStringLiteral("version"), qint64(manifest.version)},
                                     {QStringLiteral("sha256"), sha256}});
    if (Status saved =
            m_files.write(fileName(), {{QStringLiteral("run"), run}, {QStringLiteral("stages"), stages}});
        !saved)
        qWarning("node: cannot record shard version %lld of stage %lld: %s", qlonglong(manifest.version),
                 qlonglong(manifest.stage), saved.message().c_str());
    return {};
}

} // namespace tessera::node
