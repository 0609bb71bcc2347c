// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpRouter: maps a method and a path to a handler; "{name}" pattern segments capture params.

#include "HttpRequest.h"
#include "HttpResponse.h"

#include <QByteArrayList>
#include <QList>

#include <functional>

namespace tessera::coordinator::http {

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpRouter final {
public:
    // `pattern` is an absolute path such as "/v1/shards/{stage}/{version}/{file}"; a trailing
    // slash is significant. A GET route answers HEAD too unless HEAD has its own route.
    void add(const QByteArray& method, const QString& pattern, HttpHandler handler);

    struct Match {
        const HttpHandler* handler = nullptr; // null: see pathKnown
        QHash<QString, QString> params;
        bool pathKnown = false; // some route has this path: 405 rather than 404
        QByteArrayList allowed; // the methods that path accepts, for the Allow field
    };
    Match match(const QByteArray& method, const QStringList& segments) const;

private:
    struct Route {
        QByteArray method;
        QStringList segments;
        HttpHandler handler;
    };
    static bool matches(const Route& route, const QStringList& segments, QHash<QString, QString>* params);

    QList<Route> m_routes;
};

} // namespace tessera::coordinator::http
