// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpRequest: one parsed request as a route handler sees it.

#include "HttpHeaders.h"

#include <QByteArray>
#include <QHash>
#include <QHostAddress>
#include <QString>
#include <QStringList>
#include <QUrlQuery>

namespace tessera::coordinator::http {

struct HttpRequest {
    QByteArray method;    // as sent, case-sensitive ("GET", "POST", ...)
    QByteArray target;    // the raw request-target, e.g. "/v1/shards/0/3/a.safetensors?x=1"
    QString path;         // percent-decoded path without the query
    QStringList segments; // the path split on '/', each percent-decoded ("/" gives {""})
    QUrlQuery query;
    int minorVersion = 1; // HTTP/1.<minorVersion>
    HttpHeaders headers;
    QByteArray body;
    QHash<QString, QString> params; // captured by the route pattern's {name} segments
    QHostAddress peerAddress;
    quint16 peerPort = 0;

    QByteArray header(const QByteArray& name) const { return headers.value(name); }
    QString param(const QString& name) const { return params.value(name); }
};

} // namespace tessera::coordinator::http
