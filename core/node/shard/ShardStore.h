// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardStore: the node's stage shards on disk (<dataDir>/shards): where a shard and its partial
// download live, which complete shard a stage has, free space, and eviction of the rest.

#include "base/Result.h"
#include "base/ShardManifest.h"

#include <QString>

#include <cstdint>
#include <functional>
#include <optional>

namespace tessera::node {

// For a manifest whose file is F, the store holds:
//   F                  the complete shard, only ever renamed into place after it verified
//   F.manifest.json    its manifest (signature kept), written just before that rename
//   F.part             a download in progress
//   F.progress.json    what of F.part is verified (ShardDownload's record, saved atomically)
class ShardStore final {
public:
    using FreeBytes = std::function<qint64(const QString& dir)>;

    static constexpr qint64 kSpaceMargin = 32ll << 20; // left free beyond the shard itself

    // freeBytes: a test seam; the default asks QStorageInfo about dir (or its nearest parent).
    explicit ShardStore(QString dir, FreeBytes freeBytes = {});

    const QString& dir() const { return m_dir; }
    // The manifest's file name is validated to be a bare name, so these stay inside dir.
    QString pathFor(const gpu::ShardManifest& manifest) const;
    QString manifestPathFor(const gpu::ShardManifest& manifest) const;
    QString partPathFor(const gpu::ShardManifest& manifest) const;
    QString progressPathFor(const gpu::ShardManifest& manifest) const;

    Status ensureDir() const;
    qint64 freeBytes() const;
    // Error "needs 1.2 GiB free in DIR, 300 MiB available" when bytesToWrite + the margin do not fit.
    Status checkFreeSpace(qint64 bytesToWrite) const;

    // The newest version of the stage whose file is present with its saved manifest's size.
    // Sizes only: a full hash of a multi-GB file on every call would be too slow; see reverify.
    std::optional<gpu::ShardManifest> verifiedShard(int stage) const;
    // This very shard (same version and SHA-256) is complete: file present with the size of the
    // manifest saved beside it.
    bool isInstalled(const gpu::ShardManifest& manifest) const;
    // Every chunk and the whole file hashed against the manifest (reads the whole file).
    Status reverify(const gpu::ShardManifest& manifest) const;
    // What ShardManifest::verifyFile checks — the size, each chunk in order (the error names the
    // first bad one), the whole file — in one streamed pass hashed through OpenSSL.
    static Status verifyFile(const gpu::ShardManifest& manifest, const QString& path);

    // Writes F.manifest.json atomically (the shard's file is renamed into place after it).
    Status saveManifest(const gpu::ShardManifest& manifest) const;
    // A complete, verified .part becomes the shard: the manifest saved first (a crash before the
    // rename leaves a complete .part and its record, which the next start finalizes without
    // fetching anything), the file renamed into place, the directory synced, the record removed.
    Status install(const gpu::ShardManifest& manifest) const;

    // A node holds one stage: removes every other version of it, every other stage's shard and
    // partial download, and the kept shard's own partial download once the shard is complete.
    // Files whose names the store does not recognise are left alone.
    Status evictExcept(int stage, std::int64_t version) const;

    // "1.2 GiB", "300 MiB", "512 bytes".
    static QString formatBytes(qint64 bytes);

private:
    // Every manifest saved in dir that parses and whose name matches its file.
    std::vector<gpu::ShardManifest> savedManifests() const;

    QString m_dir;
    FreeBytes m_freeBytes;
};

} // namespace tessera::node
