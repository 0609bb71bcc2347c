// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpResponse: what a route handler answers, either a body in memory or a file to stream.

#include "HttpHeaders.h"

#include <QByteArray>
#include <QJsonDocument>
#include <QString>

namespace tessera::coordinator::http {

class HttpResponse final {
public:
    HttpResponse() = default;
    HttpResponse(int status, QByteArray body, const QByteArray& contentType);

    static HttpResponse json(int status, const QJsonDocument& document);
    // {"error": message}, the shape every /v1 error takes.
    static HttpResponse error(int status, const QString& message);
    // A file streamed from disk in chunks, with Range/If-Range answered against a strong ETag
    // made of `strongEtag` (quoted, e.g. "\"sha256-ab12\"") and the opened file's size,
    // modification time in ns and inode, in hex: "\"sha256-ab12-f4240-17e3c2a1b9d0e4c0-2a31\"".
    // So the served ETag changes when the file on disk is replaced or rewritten, even when the
    // caller's tag (e.g. a hash recorded in the database) does not.
    static HttpResponse file(const QString& path, const QByteArray& contentType,
                             const QByteArray& strongEtag);

    static QByteArray reasonPhrase(int status);

    int status = 200;
    HttpHeaders headers;
    QByteArray body;

    bool isFile() const { return !m_filePath.isEmpty(); }
    const QString& filePath() const { return m_filePath; }
    const QByteArray& etag() const { return m_etag; }

private:
    QString m_filePath;
    QByteArray m_etag;
};

} // namespace tessera::coordinator::http
