// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/OperatorPage.h"

#include <QFile>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

QByteArray resource(const char* name) {
    QFile f(QStringLiteral(":/operator/") + QLatin1String(name));
    if (!f.open(QIODevice::ReadOnly)) {
        // Only a broken build gets here: the files are compiled in.
        qWarning("coordinator: the operator page's %s is missing from the program", name);
        return {};
    }
    return f.readAll();
}

} // namespace

OperatorPage::OperatorPage()
    : m_html(resource("index.html"))
    , m_script(resource("operator.js"))
    , m_style(resource("operator.css")) {}

QByteArray OperatorPage::contentSecurityPolicy() {
    return QByteArrayLiteral("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                             "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
}

HttpResponse OperatorPage::serve(const QByteArray& body, const QByteArray& contentType) {
    if (body.isEmpty())
        return HttpResponse::error(500, QStringLiteral("this coordinator was built without its web page"));
    HttpResponse r(200, body, contentType);
    r.headers.set("Content-Security-Policy", contentSecurityPolicy());
    r.headers.set("X-Content-Type-Options", "nosniff");
    r.headers.set("Referrer-Policy", "no-referrer");
    r.headers.set("X-Frame-Options", "DENY");
    // A new coordinator version may bring a new page: always asked again (it is small).
    r.headers.set("Cache-Control", "no-cache");
    return r;
}

HttpResponse OperatorPage::page(const HttpRequest&) const {
    return serve(m_html, "text/html; charset=utf-8");
}

HttpResponse OperatorPage::script(const HttpRequest&) const {
    return serve(m_script, "text/javascript; charset=utf-8");
}

HttpResponse OperatorPage::style(const HttpRequest&) const {
    return serve(m_style, "text/css; charset=utf-8");
}

} // namespace tessera::coordinator
