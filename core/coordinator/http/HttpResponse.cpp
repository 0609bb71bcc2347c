// SPDX-License-Identifier: Apache-2.0
#include "HttpResponse.h"

#include <QJsonObject>

namespace tessera::coordinator::http {

HttpResponse::HttpResponse(int status_, QByteArray body_, const QByteArray& contentType)
    : status(status_)
    , body(std::move(body_)) {
    if (!contentType.isEmpty())
        headers.set(QByteArrayLiteral("Content-Type"), contentType);
}

HttpResponse HttpResponse::json(int status, const QJsonDocument& document) {
    return HttpResponse(status, document.toJson(QJsonDocument::Compact),
                        QByteArrayLiteral("application/json"));
}

HttpResponse HttpResponse::error(int status, const QString& message) {
    return json(status, QJsonDocument(QJsonObject{{QStringLiteral("error"), message}}));
}

HttpResponse HttpResponse::file(const QString& path, const QByteArray& contentType,
                                const QByteArray& strongEtag) {
    HttpResponse r(200, {}, contentType);
    r.m_filePath = path;
    r.m_etag = strongEtag;
    return r;
}

QByteArray HttpResponse::reasonPhrase(int status) {
    switch (status) {
    case 100:
        return QByteArrayLiteral("Continue");
    case 101:
        return QByteArrayLiteral("Switching Protocols");
    case 200:
        return QByteArrayLiteral("OK");
    case 201:
        return QByteArrayLiteral("Created");
    case 204:
        return QByteArrayLiteral("No Content");
    case 206:
        return QByteArrayLiteral("Partial Content");
    case 304:
        return QByteArrayLiteral("Not Modified");
    case 400:
        return QByteArrayLiteral("Bad Request");
    case 401:
        return QByteArrayLiteral("Unauthorized");
    case 403:
        return QByteArrayLiteral("Forbidden");
    case 404:
        return QByteArrayLiteral("Not Found");
    case 405:
        return QByteArrayLiteral("Method Not Allowed");
    case 408:
        return QByteArrayLiteral("Request Timeout");
    case 409:
        return QByteArrayLiteral("Conflict");
    case 413:
        return QByteArrayLiteral("Content Too Large");
    case 416:
        return QByteArrayLiteral("Range Not Satisfiable");
    case 417:
        return QByteArrayLiteral("Expectation Failed");
    case 426:
        return QByteArrayLiteral("Upgrade Required");
    case 429:
        return QByteArrayLiteral("Too Many Requests");
    case 431:
        return QByteArrayLiteral("Request Header Fields Too Large");
    case 500:
        return QByteArrayLiteral("Internal Server Error");
    case 501:
        return QByteArrayLiteral("Not Implemented");
    case 503:
        return QByteArrayLiteral("Service Unavailable");
    case 505:
        return QByteArrayLiteral("HTTP Version Not Supported");
    default:
        return QByteArrayLiteral("Unknown");
    }
}

} // namespace tessera::coordinator::http
