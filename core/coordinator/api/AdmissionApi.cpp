// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/AdmissionApi.h"

#include "common/WallClock.h"
#include "coordinator/admission/AdmissionService.h"
#include "coordinator/api/JsonBody.h"
#include "coordinator/api/Metrics.h"
#include "coordinator/store/StageVersionStore.h"

#include <QDebug>
#include <QJsonDocument>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

// The coordinator's own failure: logged in full, answered without internals.
HttpResponse internalError(const char* what, const std::string& message) {
    qWarning("coordinator: %s failed: %s", what, message.c_str());
    return HttpResponse::error(
        500, QStringLiteral("the coordinator failed to %1; try again later").arg(QString::fromLatin1(what)));
}

// 429: the address asked too often; the limit and the wait in words.
HttpResponse tooOften(const AddressRateLimiter& limiter, int retryAfter) {
    HttpResponse r = HttpResponse::error(
        429, QStringLiteral("more than %1 admission requests a minute from your address; retry in %2 s")
                 .arg(limiter.perMinute())
                 .arg(retryAfter));
    r.headers.set("Retry-After", QByteArray::number(retryAfter));
    return r;
}

} // namespace

HttpResponse AdmissionApi::challenge(const HttpRequest& request) {
    if (int wait = 0; !m_challenges.allow(request.peerAddress, WallClock::nowMs(), &wait)) {
        m_metrics.countAdmission(QStringLiteral("rate_limited"));
        return tooOften(m_challenges, wait);
    }
    Result<QJsonObject> body = parseJsonObject(request.body);
    if (!body)
        return HttpResponse::error(400, qs(body.message()));
    const QJsonValue key = body->value(u"node_key");
    if (key.isUndefined() || key.isNull())
        return HttpResponse::error(400, QStringLiteral("node_key: missing"));
    if (!key.isString())
        return HttpResponse::error(400, QStringLiteral("node_key: must be a string"));
    if (body->size() != 1)
        return HttpResponse::error(400, QStringLiteral("body: only node_key is expected"));
    Result<QString> nonce = m_service.challenge(key.toString(), WallClock::nowMs());
    if (!nonce) {
        if (nonce.message().starts_with("node_key:"))
            return HttpResponse::error(400, qs(nonce.message()));
        return internalError("issue a challenge", nonce.message());
    }
    return HttpResponse::json(200, QJsonDocument(QJsonObject{{QStringLiteral("nonce"), *nonce}}));
}

HttpResponse AdmissionApi::admit(const HttpRequest& request) {
    if (int wait = 0; !m_admissions.allow(request.peerAddress, WallClock::nowMs(), &wait)) {
        m_metrics.countAdmission(QStringLiteral("rate_limited"));
        return tooOften(m_admissions, wait);
    }
    Result<QJsonObject> body = parseJsonObject(request.body);
    Result<protocol::AdmissionClaims> claims =
        body ? protocol::parseAdmissionRequest(*body) : Result<protocol::AdmissionClaims>(body.error());
    if (!claims) {
        m_metrics.countAdmission(QStringLiteral("bad_request"));
        return HttpResponse::error(400, qs(claims.message()));
    }
    Result<AdmissionOutcome> outcome =
        m_service.admit(*claims, WallClock::nowMs(), Reputation::networkOf(request.peerAddress));
    if (!outcome) {
        m_metrics.countAdmission(QStringLiteral("error"));
        return internalError("decide the admission", outcome.message());
    }

    if (const auto* denied = std::get_if<Denied>(&*outcome)) {
        m_metrics.countAdmission(QStringLiteral("denied"));
        return HttpResponse::json(
            denied->httpStatus,
            QJsonDocument(QJsonObject{{QStringLiteral("error"), qs(denied->reason)},
                                      {QStringLiteral("reason"), protocol::refusalKindName(denied->kind)}}));
    }
    if (const auto* unauthorized = std::get_if<Unauthorized>(&*outcome)) {
        m_metrics.countAdmission(QStringLiteral("unauthorized"));
        return HttpResponse::error(401, qs(unauthorized->reason));
    }
    if (const auto* waitlisted = std::get_if<Waitlisted>(&*outcome)) {
        m_metrics.countAdmission(QStringLiteral("waitlisted"));
        HttpResponse r = HttpResponse::json(
            503, QJsonDocument(QJsonObject{{QStringLiteral("error"), qs(waitlisted->reason)},
                                           {QStringLiteral("retry_after"), waitlisted->retryAfterSeconds}}));
        r.headers.set("Retry-After", QByteArray::number(waitlisted->retryAfterSeconds));
        return r;
    }

    const Admitted& admitted = std::get<Admitted>(*outcome);
    Result<std::optional<StageVersion>> shard = StageVersionStore(m_db).latest(admitted.stage);
    if (!shard || !*shard) {
        m_metrics.countAdmission(QStringLiteral("error"));
        return internalError("find the stage's shard", shard ? "no published version" : shard.message());
    }
    m_metrics.countAdmission(QStringLiteral("admitted"));
    return HttpResponse::json(200, QJsonDocument(QJsonObject{
                                       {QStringLiteral("node_id"), admitted.nodeId},
                                       {QStringLiteral("session_token"), admitted.sessionToken},
                                       {QStringLiteral("stage"), admitted.stage},
                                       {QStringLiteral("manifest"),
                                        QJsonDocument::fromJson((*shard)->manifestJson.toUtf8()).object()},
                                   }));
}

} // namespace tessera::coordinator
