// SPDX-License-Identifier: Apache-2.0
#pragma once
// OperatorPage: the coordinator's own web page, GET / with its script and style (/operator.js,
// /operator.css), compiled in as Qt resources from api/operator/. The page is static; its script
// fetches /v1/status, /v1/nodes, /v1/leaderboard and /v1/loss every few seconds and draws them.
// Served with a Content-Security-Policy that allows nothing but this origin's script, style and
// JSON: no inline script, no other site, no framing.

#include "coordinator/http/HttpRequest.h"
#include "coordinator/http/HttpResponse.h"

#include <QByteArray>

namespace tessera::coordinator {

class OperatorPage final {
public:
    OperatorPage();

    http::HttpResponse page(const http::HttpRequest& request) const;
    http::HttpResponse script(const http::HttpRequest& request) const;
    http::HttpResponse style(const http::HttpRequest& request) const;

    // The policy every answer carries.
    static QByteArray contentSecurityPolicy();

private:
    static http::HttpResponse serve(const QByteArray& body, const QByteArray& contentType);

    QByteArray m_html;
    QByteArray m_script;
    QByteArray m_style;
};

} // namespace tessera::coordinator
