// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/ShardApi.h"

#include "coordinator/api/JsonBody.h"
#include "coordinator/store/StageVersionStore.h"

#include <QDir>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

HttpResponse storageError(const std::string& message) {
    qWarning("coordinator: reading stage versions failed: %s", message.c_str());
    return HttpResponse::error(
        500, QStringLiteral("the coordinator failed to read its shard list; try again later"));
}

} // namespace

int ShardApi::stageOf(const HttpRequest& request) const {
    const qint64 stage = parseIdSegment(request.param(QStringLiteral("stage")));
    return stage >= 0 && stage < m_stages ? int(stage) : -1;
}

HttpResponse ShardApi::manifest(const HttpRequest& request) {
    const int stage = stageOf(request);
    if (stage < 0)
        return HttpResponse::error(404,
                                   QStringLiteral("stage: this run has stages 0 to %1").arg(m_stages - 1));
    Result<std::optional<StageVersion>> latest = StageVersionStore(m_db).latest(stage);
    if (!latest)
        return storageError(latest.message());
    if (!*latest)
        return HttpResponse::error(404, QStringLiteral("stage %1 has no published shard").arg(stage));
    return HttpResponse(200, (*latest)->manifestJson.toUtf8(), "application/json");
}

HttpResponse ShardApi::file(const HttpRequest& request) {
    const int stage = stageOf(request);
    const qint64 version = parseIdSegment(request.param(QStringLiteral("version")));
    if (stage < 0 || version < 0)
        return HttpResponse::error(404, QStringLiteral("no such stage or version"));
    Result<std::optional<StageVersion>> found = StageVersionStore(m_db).find(stage, version);
    if (!found)
        return storageError(found.message());
    // One answer for every mismatch, so the route tells nothing about what else is on disk.
    if (!*found || (*found)->file != request.param(QStringLiteral("file")))
        return HttpResponse::error(404, QStringLiteral("no such shard file"));
    const StageVersion& v = **found;
    return HttpResponse::file(QDir(m_shardDir).filePath(v.file), "application/octet-stream",
                              "\"sha256-" + v.sha256.toLatin1() + '"');
}

} // namespace tessera::coordinator
