// SPDX-License-Identifier: Apache-2.0
#include "HttpRouter.h"

namespace tessera::coordinator::http {

void HttpRouter::add(const QByteArray& method, const QString& pattern, HttpHandler handler) {
    Q_ASSERT(pattern.startsWith(u'/'));
    m_routes.append({method, pattern.mid(1).split(u'/'), std::move(handler)});
}

bool HttpRouter::matches(const Route& route, const QStringList& segments, QHash<QString, QString>* params) {
    if (route.segments.size() != segments.size())
        return false;
    QHash<QString, QString> captured;
    for (qsizetype i = 0; i < segments.size(); ++i) {
        const QString& p = route.segments[i];
        if (p.size() > 2 && p.startsWith(u'{') && p.endsWith(u'}')) {
            if (segments[i].isEmpty())
                return false;
            captured.insert(p.mid(1, p.size() - 2), segments[i]);
        } else if (p != segments[i]) {
            return false;
        }
    }
    *params = std::move(captured);
    return true;
}

HttpRouter::Match HttpRouter::match(const QByteArray& method, const QStringList& segments) const {
    Match result;
    const HttpHandler* getFallback = nullptr;
    QHash<QString, QString> getParams;
    for (const Route& route : m_routes) {
        QHash<QString, QString> params;
        if (!matches(route, segments, &params))
            continue;
        result.pathKnown = true;
        if (!result.allowed.contains(route.method))
            result.allowed.append(route.method);
        if (route.method == "GET" && !result.allowed.contains("HEAD"))
            result.allowed.append(QByteArrayLiteral("HEAD"));
        if (!result.handler && route.method == method) {
            result.handler = &route.handler;
            result.params = std::move(params);
        } else if (!getFallback && method == "HEAD" && route.method == "GET") {
            getFallback = &route.handler;
            getParams = std::move(params);
        }
    }
    if (!result.handler && getFallback) {
        result.handler = getFallback;
        result.params = std::move(getParams);
    }
    return result;
}

} // namespace tessera::coordinator::http
