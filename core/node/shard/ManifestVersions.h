// SPDX-License-Identifier: Apache-2.0
#pragma once
// ManifestVersions: the newest signed stage manifest this node accepted, per stage of one run,
// kept in <dataDir>/manifest-versions.json so that an older one — a rollback to weights the run
// has left behind, signed by the same coordinator key — is refused, after a restart or a reassign
// too. A run is the coordinator's key and the model config's hash: a manifest of another run
// starts the record afresh (a new run numbers its versions from the start again).
//
//   {"run": "<hex SHA-256 of key and model hash>", "stages": {"0": {"version": 5, "sha256": "…"}}}

#include "base/Result.h"
#include "base/ShardManifest.h"
#include "node/NodeFiles.h"

#include <QByteArray>
#include <QString>

namespace tessera::node {

class ManifestVersions final {
public:
    explicit ManifestVersions(NodeFiles files)
        : m_files(std::move(files)) {}

    static QString fileName() { return QStringLiteral("manifest-versions.json"); }

    // Refuses, in words, a manifest older than the stored version of its stage in the same run, or
    // one of the stored version with another SHA-256 (two different shards signed as one version).
    // Otherwise records it as the stage's newest (atomically). coordinatorKey: the raw 32 bytes
    // that signed it. A record that cannot be written is logged, not refused: the stored floor
    // still holds, and a full disk must not stop a node that already has its shard.
    Status accept(const gpu::ShardManifest& manifest, const QByteArray& coordinatorKey) const;

private:
    NodeFiles m_files;
};

} // namespace tessera::node
