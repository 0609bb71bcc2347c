// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/StatusApi.h"

#include "common/Version.h"
#include "common/WallClock.h"
#include "coordinator/api/Metrics.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/StageVersionStore.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>

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
    };
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

namespace {

// The loss curve as an inline SVG polyline (no script, no external file).
QString lossCurveSvg(const QJsonArray& curve) {
    if (curve.size() < 2)
        return QStringLiteral("<p>The loss curve appears after two steps.</p>");
    double lo = 1e300, hi = -1e300;
    const double firstStep = curve.first().toArray().at(0).toDouble();
    const double lastStep = curve.last().toArray().at(0).toDouble();
    for (const QJsonValue& v : curve) {
        const double loss = v.toArray().at(1).toDouble();
        lo = std::min(lo, loss);
        hi = std::max(hi, loss);
    }
    const double w = 600, h = 200, span = std::max(hi - lo, 1e-9),
                 steps = std::max(lastStep - firstStep, 1.0);
    QString points;
    for (const QJsonValue& v : curve) {
        const QJsonArray p = v.toArray();
        points += QStringLiteral("%1,%2 ")
                      .arg((p.at(0).toDouble() - firstStep) / steps * w, 0, 'f', 1)
                      .arg(h - (p.at(1).toDouble() - lo) / span * h, 0, 'f', 1);
    }
    return QStringLiteral(
               "<svg width=\"%1\" height=\"%2\" viewBox=\"-40 -10 %3 %4\" "
               "style=\"border:1px solid #ccc\"><polyline fill=\"none\" stroke=\"#36c\" "
               "stroke-width=\"1.5\" points=\"%5\"/><text x=\"-38\" y=\"5\" font-size=\"10\">%6</text>"
               "<text x=\"-38\" y=\"%7\" font-size=\"10\">%8</text></svg>"
               "<p>loss, steps %9 to %10</p>")
        .arg(w + 40)
        .arg(h + 20)
        .arg(w + 50)
        .arg(h + 20)
        .arg(points.trimmed())
        .arg(hi, 0, 'f', 3)
        .arg(h)
        .arg(lo, 0, 'f', 3)
        .arg(qint64(firstStep))
        .arg(qint64(lastStep));
}

} // namespace

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
    QString trainingHtml;
    if (m_training) {
        const QJsonObject t = m_training();
        const QJsonObject mb = t.value(u"microbatches").toObject();
        QString stageNodes;
        for (const QJsonValue& v : t.value(u"training_stages").toArray())
            stageNodes += QStringLiteral("stage %1: %2 training, %3 syncing; ")
                              .arg(v.toObject().value(u"stage").toInt())
                              .arg(v.toObject().value(u"nodes").toInt())
                              .arg(v.toObject().value(u"ghosts").toInt());
        trainingHtml =
            QStringLiteral(
                "<h2>Training</h2>\n<p>Step <b>%1</b> &middot; loss <b>%2</b> &middot; %3 tokens/s "
                "&middot; %4 tokens</p>\n<p>Microbatches: %5 issued, %6 completed, %7 abandoned, %8 in "
                "flight &middot; joins %9, leaves %10</p>\n<p>%11</p>\n%12\n")
                .arg(t.value(u"step").toInteger())
                .arg(t.value(u"loss").isDouble() ? QString::number(t.value(u"loss").toDouble(), 'f', 4)
                                                 : QStringLiteral("&ndash;"))
                .arg(t.value(u"tokens_per_second").toDouble(), 0, 'f', 0)
                .arg(t.value(u"tokens").toInteger())
                .arg(mb.value(u"issued").toInteger())
                .arg(mb.value(u"completed").toInteger())
                .arg(mb.value(u"abandoned").toInteger())
                .arg(mb.value(u"in_flight").toInteger())
                .arg(t.value(u"joins").toInteger())
                .arg(t.value(u"leaves").toInteger())
                .arg(stageNodes.toHtmlEscaped())
                .arg(lossCurveSvg(t.value(u"loss_curve").toArray()));
    }
    const QString html =
        QStringLiteral(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Tessera coordinator</title>\n"
            "<style>body{font-family:sans-serif;margin:2em}td,th{padding:.2em 1em;text-align:right}"
            "</style></head><body>\n<h1>Tessera coordinator</h1>\n"
            "<p>Version %1 &middot; model <b>%2</b> (%3 parameters, %4 stages)</p>\n"
            "<p>Nodes online: <b>%5</b> of %6 admitted</p>\n"
            "<table><tr><th>stage</th><th>nodes online</th><th>shard version</th><th>step</th></tr>\n"
            "%7</table>\n%8<p><a href=\"/v1/status\">/v1/status</a> &middot; "
            "<a href=\"/metrics\">/metrics</a></p>\n</body></html>\n")
            .arg(tesseraVersion().toHtmlEscaped(), model)
            .arg(qint64(m_settings.model.parameterCount()))
            .arg(m_settings.model.stages)
            .arg(s->nodesOnline)
            .arg(s->nodesTotal)
            .arg(rows)
            .arg(trainingHtml);
    return HttpResponse(200, html.toUtf8(), "text/html; charset=utf-8");
}

} // namespace tessera::coordinator
