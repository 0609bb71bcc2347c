// SPDX-License-Identifier: Apache-2.0
#include "node/shard/ShardStore.h"

#include "node/shard/Sha256Digest.h"
#include "node/shard/ShardProgress.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QSet>
#include <QStorageInfo>

#include <algorithm>
#include <filesystem>

#ifdef Q_OS_UNIX
#include <fcntl.h>
#include <unistd.h>
#endif

namespace tessera::node {

using gpu::ShardManifest;

namespace {

constexpr qint64 kMaxManifestBytes = 4 << 20; // 8b's 5 GB stage has ~80 chunk hashes
constexpr std::uint64_t kReadPiece = 4 << 20;
const QString kShardSuffix = QStringLiteral(".safetensors");
const QString kManifestSuffix = QStringLiteral(".manifest.json");

Result<ShardManifest> readManifest(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return makeError("cannot open " + path.toStdString() + ": " + f.errorString().toStdString());
    const QByteArray text = f.read(kMaxManifestBytes + 1);
    if (text.size() > kMaxManifestBytes)
        return makeError(path.toStdString() + " is larger than 4 MiB");
    return ShardManifest::fromJson(std::string_view(text.constData(), std::size_t(text.size())));
}

// "F.part", "F.progress.json", "F.manifest.json.Xa12": the shard file name F each belongs to.
QString shardBaseOf(const QString& entry) {
    const qsizetype at = entry.indexOf(kShardSuffix);
    return at <= 0 ? QString() : entry.left(at + kShardSuffix.size());
}

QString canonicalName(std::int64_t stage, std::int64_t version) {
    return QStringLiteral("stage-%1-v%2.safetensors").arg(stage).arg(version);
}

} // namespace

ShardStore::ShardStore(QString dir, FreeBytes freeBytes)
    : m_dir(std::move(dir))
    , m_freeBytes(std::move(freeBytes)) {}

QString ShardStore::pathFor(const ShardManifest& manifest) const {
    return QDir(m_dir).filePath(QString::fromStdString(manifest.file));
}

QString ShardStore::manifestPathFor(const ShardManifest& manifest) const {
    return pathFor(manifest) + kManifestSuffix;
}

QString ShardStore::partPathFor(const ShardManifest& manifest) const {
    return pathFor(manifest) + QStringLiteral(".part");
}

QString ShardStore::progressPathFor(const ShardManifest& manifest) const {
    return pathFor(manifest) + QStringLiteral(".progress.json");
}

Status ShardStore::ensureDir() const {
    if (!QDir().mkpath(m_dir))
        return makeError("cannot create the shard directory " + m_dir.toStdString());
    return {};
}

qint64 ShardStore::freeBytes() const {
    if (m_freeBytes)
        return m_freeBytes(m_dir);
    // QStorageInfo needs an existing path: the nearest existing parent is on the same volume.
    QFileInfo at(m_dir);
    while (!at.exists() && !at.isRoot() && at.absolutePath() != at.absoluteFilePath())
        at = QFileInfo(at.absolutePath());
    const QStorageInfo storage(at.absoluteFilePath());
    return storage.isValid() ? storage.bytesAvailable() : -1;
}

Status ShardStore::checkFreeSpace(qint64 bytesToWrite) const {
    const qint64 needed = std::max<qint64>(bytesToWrite, 0) + kSpaceMargin;
    const qint64 available = freeBytes();
    if (available < 0)
        return {}; // the volume cannot tell: writing will say if it runs out
    if (available >= needed)
        return {};
    return makeError("needs " + formatBytes(needed).toStdString() + " free in " + m_dir.toStdString() + ", " +
                     formatBytes(available).toStdString() + " available");
}

std::vector<ShardManifest> ShardStore::savedManifests() const {
    std::vector<ShardManifest> out;
    const QStringList names = QDir(m_dir).entryList({u'*' + kShardSuffix + kManifestSuffix}, QDir::Files);
    for (const QString& name : names) {
        Result<ShardManifest> m = readManifest(QDir(m_dir).filePath(name));
        // A manifest must describe the file it sits beside; anything else is not ours to trust.
        if (m && QString::fromStdString(m->file) + kManifestSuffix == name)
            out.push_back(std::move(*m));
    }
    return out;
}

std::optional<ShardManifest> ShardStore::verifiedShard(int stage) const {
    std::optional<ShardManifest> best;
    for (ShardManifest& m : savedManifests()) {
        if (m.stage != stage || (best && best->version >= m.version))
            continue;
        const QFileInfo file(pathFor(m));
        if (file.isFile() && quint64(file.size()) == m.fileSize)
            best = std::move(m);
    }
    return best;
}

bool ShardStore::isInstalled(const ShardManifest& manifest) const {
    const QFileInfo file(pathFor(manifest));
    if (!file.isFile() || quint64(file.size()) != manifest.fileSize)
        return false;
    Result<ShardManifest> saved = readManifest(manifestPathFor(manifest));
    return saved && saved->sha256 == manifest.sha256 && saved->version == manifest.version &&
           saved->stage == manifest.stage;
}

Status ShardStore::reverify(const ShardManifest& manifest) const {
    return verifyFile(manifest, pathFor(manifest));
}

Status ShardStore::verifyFile(const ShardManifest& manifest, const QString& path) {
    if (Status s = manifest.validate(); !s)
        return s;
    const std::string name = QFileInfo(path).fileName().toStdString();
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return makeError("cannot open " + path.toStdString() + ": " + f.errorString().toStdString());
    if (quint64(f.size()) != manifest.fileSize)
        return makeError(name + " is " + std::to_string(f.size()) + " bytes, the manifest says " +
                         std::to_string(manifest.fileSize) + " (truncated or incomplete download?)");
    Sha256Digest whole;
    Sha256Digest chunk;
    QByteArray buffer(qsizetype(std::min<std::uint64_t>(manifest.chunkSize, kReadPiece)), Qt::Uninitialized);
    std::uint64_t done = 0;
    for (std::size_t index = 0; index < manifest.chunks.size(); ++index) {
        const std::uint64_t end = std::min(done + manifest.chunkSize, manifest.fileSize);
        while (done < end) {
            const qint64 n =
                f.read(buffer.data(), qint64(std::min<std::uint64_t>(buffer.size(), end - done)));
            if (n <= 0)
                return makeError("cannot read " + path.toStdString() + ": " +
                                 (n < 0 ? f.errorString().toStdString() : "it shrank while being verified"));
            whole.update(QByteArrayView(buffer.constData(), n));
            chunk.update(QByteArrayView(buffer.constData(), n));
            done += std::uint64_t(n);
        }
        if (chunk.finalHex() != manifest.chunks[index])
            return makeError("chunk " + std::to_string(index + 1) + " of " +
                             std::to_string(manifest.chunks.size()) + " of " + name +
                             " does not match the manifest (tampered or damaged on disk?)");
    }
    if (whole.finalHex() != manifest.sha256)
        return makeError(name + " does not match the manifest's SHA-256");
    return {};
}

Status ShardStore::saveManifest(const ShardManifest& manifest) const {
    QSaveFile f(manifestPathFor(manifest));
    const QByteArray json = QByteArray::fromStdString(manifest.toJson());
    if (!f.open(QIODevice::WriteOnly) || f.write(json) != json.size() || !f.flush() || !f.commit())
        return makeError("cannot save " + manifestPathFor(manifest).toStdString() + ": " +
                         f.errorString().toStdString());
    return {};
}

Status ShardStore::evictExcept(int stage, std::int64_t version) const {
    const QDir dir(m_dir);
    if (!dir.exists())
        return {};
    // The kept shard's file name: from its saved manifest, from its download record, or the
    // coordinator's naming when neither exists yet.
    QSet<QString> kept{canonicalName(stage, version)};
    bool complete = false;
    for (const ShardManifest& m : savedManifests()) {
        if (m.stage == stage && m.version == version) {
            kept.insert(QString::fromStdString(m.file));
            const QFileInfo file(pathFor(m));
            complete = complete || (file.isFile() && quint64(file.size()) == m.fileSize);
        }
    }
    const QStringList records = dir.entryList({QStringLiteral("*.safetensors.progress.json")}, QDir::Files);
    for (const QString& name : records) {
        Result<ShardProgress> p = ShardProgress::load(dir.filePath(name));
        if (p && p->stage == stage && p->version == version)
            kept.insert(shardBaseOf(name));
    }

    std::string failed;
    for (const QString& name : dir.entryList(QDir::Files | QDir::Hidden)) {
        const QString base = shardBaseOf(name);
        if (base.isEmpty())
            continue;
        const bool isKeptShard = kept.contains(base);
        // A complete kept shard needs only itself and its manifest; its .part is stale.
        const bool stalePartial = isKeptShard && complete && name != base && name != base + kManifestSuffix;
        if (isKeptShard && !stalePartial)
            continue;
        if (!QFile::remove(dir.filePath(name)))
            failed += (failed.empty() ? "" : ", ") + name.toStdString();
    }
    if (!failed.empty())
        return makeError("could not remove old shard files in " + m_dir.toStdString() + ": " + failed);
    return {};
}

QString ShardStore::formatBytes(qint64 bytes) {
    if (bytes < 1024)
        return QStringLiteral("%1 bytes").arg(bytes);
    static const char* const units[] = {"KiB", "MiB", "GiB", "TiB"};
    double value = double(bytes);
    int unit = -1;
    while (value >= 1024 && unit < 3) {
        value /= 1024;
        ++unit;
    }
    return QStringLiteral("%1 %2").arg(value, 0, 'f', value < 10 ? 1 : 0).arg(QLatin1String(units[unit]));
}

Status ShardStore::install(const gpu::ShardManifest& manifest) const {
    if (Status s = saveManifest(manifest); !s)
        return s;
    std::error_code ec;
    std::filesystem::rename(std::filesystem::path(QFile::encodeName(partPathFor(manifest)).toStdString()),
                            std::filesystem::path(QFile::encodeName(pathFor(manifest)).toStdString()), ec);
    if (ec)
        return makeError("cannot install " + manifest.file + ": " + ec.message());
#ifdef Q_OS_UNIX
    // The rename is durable only once the directory entry is on disk too.
    if (const int fd = ::open(QFile::encodeName(m_dir).constData(), O_RDONLY | O_DIRECTORY); fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
#endif
    QFile::remove(progressPathFor(manifest));
    return {};
}

} // namespace tessera::node
