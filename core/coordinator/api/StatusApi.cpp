// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/StatusApi.h"

#include "common/Version.h"
#include "common/WallClock.h"
#include "coordinator/api/Metrics.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/StageVersionStore.h"
#include "coordinator/store/TrainingStore.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

const QString kName = QStringLiteral("tessera-coordinator");
const QString kPreparing = QStringLiteral("preparing");
const QString kServing = QStringLiteral("serving");
// Points of /v1/loss: enough for a curve as wide as a screen.
constexpr int kLossCurvePoints = 600;

QJsonObject modelObject(const gpu::ModelConfig& config) {
    return QJsonDocument::fromJson(QByteArray::fromStdString(config.toJson())).object();
}

HttpResponse storageError(const std::string& message) {
    qWarning("coordinator: reading the swarm status failed: %s", message.c_str());
    return HttpResponse::error(500,
                               QStringLiteral("the coordinator failed to read its status; try again later"));
}

// Prometheus label values: backslash, quote and newline escaped.
QByteArray label(const QString& value) {
    QByteArray v = value.toUtf8();
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
    return v;
}

} // namespace

StatusApi::StatusApi(Database& db, Metrics& metrics, StatusApiSettings settings)
    : m_db(db)
    , m_metrics(metrics)
    , m_settings(std::move(settings))
    , m_lossCache(m_settings.cacheFor) {}

Result<StatusApi::Snapshot> StatusApi::snapshot() const {
    NodeRegistry registry(m_db);
    StageVersionStore versions(m_db);
    Snapshot s;
    Result<qint64> online = registry.count(NodeState::Online);
    Result<qint64> total = registry.count();
    if (!online || !total)
        return makeError(online ? total.message() : online.message());
    s.nodesOnline = *online;
    s.nodesTotal = *total;
    for (int stage = 0; stage < m_settings.model.stages; ++stage) {
        StageRow row;
        row.stage = stage;
        Result<qint64> n = registry.count(NodeState::Online, stage);
        if (!n)
            return n.error();
        row.nodesOnline = *n;
        Result<std::optional<StageVersion>> v = versions.latest(stage);
        if (!v)
            return v.error();
        if (*v) {
            row.version = (*v)->version;
            row.step = (*v)->step;
        }
        s.stages.push_back(row);
    }
    return s;
}

HttpResponse StatusApi::info(const HttpRequest&) const {
    return HttpResponse::json(
        200, QJsonDocument(QJsonObject{
                 {QStringLiteral("name"), kName},
                 {QStringLiteral("version"), tesseraVersion()},
                 {QStringLiteral("model"), modelObject(m_settings.model)},
                 {QStringLiteral("model_hash"), QString::fromStdString(m_settings.model.hash())},
                 {QStringLiteral("stages"), m_settings.model.stages},
                 {QStringLiteral("coordinator_key"), m_settings.coordinatorKey},
                 {QStringLiteral("min_client_version"), m_settings.minClientVersion},
                 {QStringLiteral("state"), m_preparation ? kPreparing : kServing},
             }));
}

QJsonObject StatusApi::statusJson(const Snapshot& s) const {
    const QJsonObject training = m_training ? m_training() : QJsonObject();
    const QJsonArray trainingStages = training.value(u"training_stages").toArray();
    QJsonArray stages;
    for (const StageRow& row : s.stages) {
        QJsonObject stage{{QStringLiteral("stage"), row.stage},
                          {QStringLiteral("nodes_online"), row.nodesOnline},
                          {QStringLiteral("version"), row.version},
                          {QStringLiteral("step"), row.step}};
        // The data plane's view of the stage: nodes routed to, ghosts syncing, work in flight.
        for (const QJsonValue& v : trainingStages) {
            const QJsonObject t = v.toObject();
            if (t.value(u"stage").toInt(-1) != row.stage)
                continue;
            for (auto it = t.begin(); it != t.end(); ++it)
                if (!stage.contains(it.key()))
                    stage.insert(it.key(), it.value());
        }
        stages.append(stage);
    }
    QJsonObject out{
        {QStringLiteral("name"), kName},
        {QStringLiteral("version"), tesseraVersion()},
        {QStringLiteral("model"), QString::fromStdString(m_settings.model.name)},
        {QStringLiteral("model_hash"), QString::fromStdString(m_settings.model.hash())},
        {QStringLiteral("parameters"), qint64(m_settings.model.parameterCount())},
        {QStringLiteral("nodes"),
         QJsonObject{{QStringLiteral("online"), s.nodesOnline}, {QStringLiteral("total"), s.nodesTotal}}},
        {QStringLiteral("stages"), stages},
        {QStringLiteral("uptime_s"), (WallClock::nowMs() - m_settings.startedAtMs) / 1000},
        {QStringLiteral("state"), m_preparation ? kPreparing : kServing},
    };
    if (m_preparation)
        out.insert(kPreparing, m_preparation());
    for (auto it = training.begin(); it != training.end(); ++it)
        if (it.key() != u"training_stages")
            out.insert(it.key(), it.value());
    return out;
}

HttpResponse StatusApi::status(const HttpRequest&) const {
    Result<Snapshot> s = snapshot();
    if (!s)
        return storageError(s.message());
    return HttpResponse::json(200, QJsonDocument(statusJson(*s)));
}

HttpResponse StatusApi::metrics(const HttpRequest&) const {
    Result<Snapshot> s = snapshot();
    if (!s)
        return storageError(s.message());
    QByteArray out;
    out += "# HELP tessera_nodes_online Nodes admitted and online.\n# TYPE tessera_nodes_online gauge\n";
    out += "tessera_nodes_online " + QByteArray::number(s->nodesOnline) + '\n';
    out += "# HELP tessera_nodes_total Nodes ever admitted.\n# TYPE tessera_nodes_total gauge\n";
    out += "tessera_nodes_total " + QByteArray::number(s->nodesTotal) + '\n';
    out += "# HELP tessera_stage_nodes_online Online nodes per stage.\n# TYPE tessera_stage_nodes_online "
           "gauge\n";
    for (const StageRow& row : s->stages)
        out += "tessera_stage_nodes_online{stage=\"" + QByteArray::number(row.stage) + "\"} " +
               QByteArray::number(row.nodesOnline) + '\n';
    out += "# HELP tessera_stage_version Latest published shard version per stage.\n"
           "# TYPE tessera_stage_version gauge\n";
    for (const StageRow& row : s->stages)
        out += "tessera_stage_version{stage=\"" + QByteArray::number(row.stage) + "\"} " +
               QByteArray::number(row.version) + '\n';
    out += "# HELP tessera_admissions_total Admission requests by outcome.\n"
           "# TYPE tessera_admissions_total counter\n";
    for (auto it = m_metrics.admissions().begin(); it != m_metrics.admissions().end(); ++it)
        out += "tessera_admissions_total{outcome=\"" + label(it.key()) + "\"} " +
               QByteArray::number(it.value()) + '\n';
    out += "# HELP tessera_sessions_connected Node session WebSockets open and authenticated.\n"
           "# TYPE tessera_sessions_connected gauge\n";
    out += "tessera_sessions_connected " + QByteArray::number(m_metrics.sessionsConnected()) + '\n';
    out += "# HELP tessera_session_events_total Session WebSockets opened, rejected and timed out.\n"
           "# TYPE tessera_session_events_total counter\n";
    for (auto it = m_metrics.sessions().begin(); it != m_metrics.sessions().end(); ++it)
        out += "tessera_session_events_total{event=\"" + label(it.key()) + "\"} " +
               QByteArray::number(it.value()) + '\n';
    out += "# HELP tessera_http_requests_total HTTP requests routed, by route.\n"
           "# TYPE tessera_http_requests_total counter\n";
    for (auto it = m_metrics.requests().begin(); it != m_metrics.requests().end(); ++it)
        out += "tessera_http_requests_total{route=\"" + label(it.key()) + "\"} " +
               QByteArray::number(it.value()) + '\n';
    if (m_training) {
        const QJsonObject t = m_training();
        const QJsonObject mb = t.value(u"microbatches").toObject();
        out += "# HELP tessera_step Global training step.\n# TYPE tessera_step gauge\n";
        out += "tessera_step " + QByteArray::number(t.value(u"step").toInteger()) + '\n';
        if (t.value(u"loss").isDouble()) {
            out += "# HELP tessera_loss Mean training loss of the last step.\n# TYPE tessera_loss gauge\n";
            out += "tessera_loss " + QByteArray::number(t.value(u"loss").toDouble(), 'g', 8) + '\n';
        }
        out += "# HELP tessera_tokens_total Tokens trained.\n# TYPE tessera_tokens_total counter\n";
        out += "tessera_tokens_total " + QByteArray::number(t.value(u"tokens").toInteger()) + '\n';
        out += "# HELP tessera_microbatches_total Microbatches by outcome.\n"
               "# TYPE tessera_microbatches_total counter\n";
        for (const char* key : {"issued", "completed", "abandoned"})
            out += QByteArray("tessera_microbatches_total{state=\"") + key + "\"} " +
                   QByteArray::number(mb.value(QLatin1String(key)).toInteger()) + '\n';
        out += "# HELP tessera_credits_granted_flop FLOPs of accepted work.\n"
               "# TYPE tessera_credits_granted_flop counter\n";
        out += "tessera_credits_granted_flop " +
               QByteArray::number(t.value(u"credits_granted_flop").toInteger()) + '\n';
    }
    return HttpResponse(200, out, "text/plain; version=0.0.4; charset=utf-8");
}

HttpResponse StatusApi::loss(const HttpRequest&) {
    return m_lossCache.get(WallClock::nowMs(), [this] {
        Result<std::vector<LossPoint>> curve = TrainingStore(m_db).lossCurve(kLossCurvePoints);
        if (!curve)
            return storageError(curve.message());
        QJsonArray points;
        for (const LossPoint& p : *curve)
            points.append(QJsonArray{p.step, p.loss, p.tokens, p.atMs});
        return HttpResponse::json(200, QJsonDocument(QJsonObject{
                                           {QStringLiteral("points"), points},
                                           {QStringLiteral("max_points"), kLossCurvePoints},
                                       }));
    });
}

} // namespace tessera::coordinator
