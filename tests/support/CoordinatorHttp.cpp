// SPDX-License-Identifier: Apache-2.0
#include "CoordinatorHttp.h"

#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"

#include <QJsonDocument>
#include <QNetworkAccessManager>
#include <QNetworkRequest>
#include <QSslConfiguration>
#include <QTest>
#include <QUrl>

#include <memory>

namespace tessera::test {

QJsonObject HttpReply::json() const {
    return QJsonDocument::fromJson(body).object();
}

QString HttpReply::error() const {
    return json().value(u"error").toString();
}

HttpReply httpRequest(QNetworkAccessManager& net, const QSslConfiguration& ssl, const QString& url,
                      const QByteArray& method, const QByteArray& body, int timeoutMs) {
    QNetworkRequest request{QUrl(url)};
    request.setSslConfiguration(ssl);
    if (!body.isNull())
        request.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    std::unique_ptr<QNetworkReply> reply(net.sendCustomRequest(request, method, body));
    if (!QTest::qWaitFor([&] { return reply->isFinished(); }, timeoutMs))
        return {};
    HttpReply r;
    r.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    r.body = reply->readAll();
    for (const auto& [name, value] : reply->rawHeaderPairs())
        r.headers.insert(name.toLower(), value);
    r.networkError = reply->error();
    if (r.status == 0)
        qWarning("%s %s failed: %s", method.constData(), qPrintable(url), qPrintable(reply->errorString()));
    return r;
}

QJsonObject testHardware(qint64 memoryBytes) {
    return QJsonObject{{QStringLiteral("device"), QStringLiteral("cpu")},
                       {QStringLiteral("name"), QStringLiteral("Test CPU")},
                       {QStringLiteral("memory_bytes"), memoryBytes}};
}

QJsonObject testBench(double gflops) {
    return QJsonObject{{QStringLiteral("gflops"), gflops}, {QStringLiteral("dtype"), QStringLiteral("fp32")}};
}

HttpReply admitNode(QNetworkAccessManager& net, const QSslConfiguration& ssl, const QString& base,
                    const Identity& id, QJsonObject* request, const QJsonObject& hardware,
                    const QString& clientVersion) {
    const HttpReply challenge =
        httpRequest(net, ssl, base + QStringLiteral("/v1/admission/challenge"), "POST",
                    QJsonDocument(QJsonObject{{QStringLiteral("node_key"), id.publicKeyBase64()}}).toJson());
    if (challenge.status != 200)
        return challenge;
    const QJsonObject body = protocol::makeAdmissionRequest(id, challenge.json().value(u"nonce").toString(),
                                                            hardware, testBench(), clientVersion);
    if (request)
        *request = body;
    return httpRequest(net, ssl, base + QStringLiteral("/v1/admission"), "POST",
                       QJsonDocument(body).toJson());
}

} // namespace tessera::test
