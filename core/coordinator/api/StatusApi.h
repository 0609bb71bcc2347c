// SPDX-License-Identifier: Apache-2.0
#pragma once
// StatusApi: what the coordinator tells about itself and the swarm: GET /v1/info, /v1/status,
// /v1/loss (the loss curve of the whole run, across restarts) and /metrics (Prometheus text).
// /v1/info and /v1/status carry the run's "state": "preparing" (its initial shards are being
// written; /v1/status adds "preparing": the progress) or "serving".

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "coordinator/api/ResponseCache.h"
#include "coordinator/http/HttpRequest.h"
#include "coordinator/http/HttpResponse.h"

#include <QJsonObject>
#include <QString>

#include <chrono>
#include <functional>
#include <vector>

namespace tessera::coordinator {

class Database;
class Metrics;

struct StatusApiSettings {
    gpu::ModelConfig model;
    QString coordinatorKey;   // base64url Ed25519 public key
    QString minClientVersion; // "0.1.0"
    qint64 startedAtMs = 0;
    std::chrono::milliseconds cacheFor{std::chrono::seconds(3)}; // /v1/loss is read again after this
};

class StatusApi final {
public:
    StatusApi(Database& db, Metrics& metrics, StatusApiSettings settings);

    http::HttpResponse info(const http::HttpRequest& request) const;
    http::HttpResponse status(const http::HttpRequest& request) const;
    http::HttpResponse metrics(const http::HttpRequest& request) const;
    // 200 {"points": [[step, loss, tokens, at_ms], ...], "max_points"}: loss_history, every process's
    // steps, at most max_points (consecutive steps averaged when there are more), oldest first.
    http::HttpResponse loss(const http::HttpRequest& request);

    // The data plane's part of the status (Trainer::status()); none: the fields are absent.
    void setTrainingStatus(std::function<QJsonObject()> training) { m_training = std::move(training); }
    // While set, the run is preparing and this is its progress (RunPreparation::progressJson).
    void setPreparation(std::function<QJsonObject()> preparation) { m_preparation = std::move(preparation); }

private:
    struct StageRow {
        int stage = 0;
        qint64 nodesOnline = 0;
        qint64 version = 0; // 0: none published
        qint64 step = 0;
    };
    struct Snapshot {
        qint64 nodesOnline = 0;
        qint64 nodesTotal = 0;
        std::vector<StageRow> stages;
    };
    Result<Snapshot> snapshot() const;
    QJsonObject statusJson(const Snapshot& s) const;

    Database& m_db;
    Metrics& m_metrics;
    StatusApiSettings m_settings;
    std::function<QJsonObject()> m_training;
    std::function<QJsonObject()> m_preparation;
    ResponseCache m_lossCache;
};

} // namespace tessera::coordinator
