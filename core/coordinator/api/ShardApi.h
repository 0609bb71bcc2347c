// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardApi: GET /v1/shards/{stage}/manifest and GET /v1/shards/{stage}/{version}/{file}.

#include "coordinator/http/HttpRequest.h"
#include "coordinator/http/HttpResponse.h"

#include <QString>

namespace tessera::coordinator {

class Database;

class ShardApi final {
public:
    ShardApi(Database& db, QString shardDir, int stages)
        : m_db(db)
        , m_shardDir(std::move(shardDir))
        , m_stages(stages) {}

    // The latest signed manifest of the stage; 404 for a stage the run does not have.
    http::HttpResponse manifest(const http::HttpRequest& request);
    // The shard file of a published (stage, version), streamed with Range/If-Range against a
    // strong ETag: "sha256-<hex>" extended by HttpConnection with the served file's size, mtime
    // and inode, so a file replaced on disk gets a new tag. {file} must equal the manifest's file
    // name exactly: the path on disk comes from the database, never from the request.
    http::HttpResponse file(const http::HttpRequest& request);

private:
    int stageOf(const http::HttpRequest& request) const; // -1: not one of the run's stages

    Database& m_db;
    QString m_shardDir;
    int m_stages;
};

} // namespace tessera::coordinator
