// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardProgress: the record of a partial shard download (<file>.progress.json): which server
// version of the file it is (the ETag) and how much of the .part is verified chunk by chunk.

#include "base/Result.h"

#include <QString>

#include <cstdint>

namespace tessera::node {

struct ShardProgress {
    QString url;                    // where the bytes came from (informational: a port may change)
    QString etag;                   // the strong ETag the bytes were served under, for If-Range
    std::int64_t verifiedBytes = 0; // a chunk-aligned prefix of the .part whose chunks matched
    std::int64_t fileSize = 0;      // the manifest's
    QString sha256;                 // the manifest's whole-file hash: the record's identity
    std::int64_t stage = 0;         // so that eviction knows whose partial download it is
    std::int64_t version = 0;

    // Strict: every field present and typed; verifiedBytes within [0, fileSize].
    static Result<ShardProgress> load(const QString& path);
    // Atomic (QSaveFile: temporary file, fsync, rename): a crash leaves the old or the new record.
    Status save(const QString& path) const;
};

} // namespace tessera::node
