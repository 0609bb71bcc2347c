#include "coordinator/api/StatusApi.h"

#include "common/Version.h"
#include "coordinator/NodeRegistry.h"
#include "coordinator/StageVersionStore.h"
#include "coordinator/api/Metrics.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

const QString kName = QStringLiteral("tessera-coordinator");

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
    , m_settings(std::move(settings)) {}

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
             }));
}

QJsonObject StatusApi::statusJson(const Snapshot& s) const {
    QJsonArray stages;
    for (const StageRow& row : s.stages)
        stages.append(QJsonObject{{QStringLiteral("stage"), row.stage},
                                  {QStringLiteral("nodes_online"), row.nodesOnline},
                                  {QStringLiteral("version"), row.version},
                                  {QStringLiteral("step"), row.step}});
    return QJsonObject{
        {QStringLiteral("name"), kName},
        {QStringLiteral("version"), tesseraVersion()},
        {QStringLiteral("model"), QString::fromStdString(m_settings.model.name)},
        {QStringLiteral("model_hash"), QString::fromStdString(m_settings.model.hash())},
        {QStringLiteral("parameters"), qint64(m_settings.model.parameterCount())},
        {QStringLiteral("nodes"),
         QJsonObject{{QStringLiteral("online"), s.nodesOnline}, {QStringLiteral("total"), s.nodesTotal}}},
        {QStringLiteral("stages"), stages},
        {QStringLiteral("uptime_s"), (QDateTime::currentMSecsSinceEpoch() - m_settings.startedAtMs) / 1000},
    };
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
    return HttpResponse(200, out, "text/plain; version=0.0.4; charset=utf-8");
}

HttpResponse StatusApi::page(const HttpRequest&) const {
    Result<Snapshot> s = snapshot();
    if (!s)
        return storageError(s.message());
    const QString model = QString::fromStdString(m_settings.model.name).toHtmlEscaped();
    QString rows;
    for (const StageRow& row : s->stages)
        rows += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>\n")
                    .arg(row.stage)
                    .arg(row.nodesOnline)
                    .arg(row.version)
                    .arg(row.step);
    const QString html =
        QStringLiteral(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Tessera coordinator</title>\n"
            "<style>body{font-family:sans-serif;margin:2em}td,th{padding:.2em 1em;text-align:right}"
            "</style></head><body>\n<h1>Tessera coordinator</h1>\n"
            "<p>Version %1 &middot; model <b>%2</b> (%3 parameters, %4 stages)</p>\n"
            "<p>Nodes online: <b>%5</b> of %6 admitted</p>\n"
            "<table><tr><th>stage</th><th>nodes online</th><th>shard version</th><th>step</th></tr>\n"
            "%7</table>\n<p><a href=\"/v1/status\">/v1/status</a> &middot; "
            "<a href=\"/metrics\">/metrics</a></p>\n</body></html>\n")
            .arg(tesseraVersion().toHtmlEscaped(), model)
            .arg(qint64(m_settings.model.parameterCount()))
            .arg(m_settings.model.stages)
            .arg(s->nodesOnline)
            .arg(s->nodesTotal)
            .arg(rows);
    return HttpResponse(200, html.toUtf8(), "text/html; charset=utf-8");
}

} // namespace tessera::coordinator
