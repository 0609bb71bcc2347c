// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardInspect: validates a stage shard on disk (the safetensors file, and its manifest when
// given) and describes it for `tessera-node shard inspect`.

#include "base/Result.h"
#include "base/ShardManifest.h"
#include "shard/Safetensors.h"

#include <QJsonObject>
#include <QString>

#include <optional>

namespace tessera::node {

class ShardInspect final {
public:
    // Errors are one line, fit for "tessera-node: shard inspect: <reason>".
    static Result<ShardInspect> run(const QString& file, const QString& manifestFile = {});

    QJsonObject toJson() const;
    QString toText() const;

private:
    ShardInspect(QString file, gpu::SafetensorsFile shard, std::optional<gpu::ShardManifest> manifest);

    QString m_file;
    gpu::SafetensorsFile m_shard;
    std::optional<gpu::ShardManifest> m_manifest;
};

} // namespace tessera::node
