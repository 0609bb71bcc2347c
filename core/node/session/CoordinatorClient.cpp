// SPDX-License-Identifier: Apache-2.0
#include "node/session/CoordinatorClient.h"

#include <QHostAddress>
#include <QJsonDocument>
#include <QNetworkReply>
#include <QSslCertificate>

#include <memory>

namespace tessera::node {

QJsonObject HttpReply::json() const {
    return QJsonDocument::fromJson(body).object();
}

QString HttpReply::describe() const {
    if (status == 0)
        return networkError.isEmpty() ? QStringLiteral("no answer") : networkError;
    const QString error = json().value(u"error").toString();
    return error.isEmpty() ? QStringLiteral("HTTP %1").arg(status)
                           : QStringLiteral("HTTP %1: %2").arg(status).arg(error);
}

CoordinatorClient::CoordinatorClient(QUrl base, const QString& caFile, QObject* parent)
    : QObject(parent)
    , m_base(std::move(base))
    , m_caFile(caFile)
    , m_network(this)
    , m_ssl(QSslConfiguration::defaultConfiguration()) {
    m_base.setPath(QString());
    m_network.setAutoDeleteReplies(false);
}

Status CoordinatorClient::checkUrl(const QUrl& url) {
    if (!url.isValid() || url.host().isEmpty())
        return makeError("--coordinator: not a URL (expected https://HOST:PORT)");
    if (url.scheme() == u"https")
        return {};
    if (url.scheme() != u"http")
        return makeError("--coordinator: the scheme must be https (or http to a loopback address)");
    const QHostAddress address(url.host());
    if (url.host() == u"localhost" || (!address.isNull() && address.isLoopback()))
        return {};
    return makeError("--coordinator: plain http is only allowed to a loopback address; use https");
}

Status CoordinatorClient::loadCa() {
    if (m_caFile.isEmpty())
        return {};
    const QList<QSslCertificate> certs = QSslCertificate::fromPath(m_caFile, QSsl::Pem);
    if (certs.isEmpty())
        return makeError("--coordinator-ca " + m_caFile.toStdString() + ": no PEM certificate in it");
    m_ssl.addCaCertificates(certs);
    return {};
}

QUrl CoordinatorClient::sessionUrl() const {
    QUrl url = m_base;
    url.setScheme(m_base.scheme() == u"https" ? QStringLiteral("wss") : QStringLiteral("ws"));
    url.setPath(QStringLiteral("/v1/session"));
    return url;
}

QNetworkRequest CoordinatorClient::request(const QString& path, int timeoutMs) const {
    QUrl url = m_base;
    const qsizetype query = path.indexOf(u'?');
    url.setPath(query < 0 ? path : path.left(query));
    if (query >= 0)
        url.setQuery(path.mid(query + 1));
    QNetworkRequest r(url);
    r.setSslConfiguration(m_ssl);
    r.setTransferTimeout(timeoutMs);
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    return r;
}

void CoordinatorClient::watch(QNetworkReply* reply, Callback done) {
    // The body is read as it comes and capped: a coordinator that answers without end must not
    // fill the node's memory (Qt would otherwise buffer all of it until the reply finishes).
    auto body = std::make_shared<QByteArray>();
    auto tooLarge = std::make_shared<bool>(false);
    const qint64 limit = m_maxReplyBytes;
    reply->setReadBufferSize(kReadChunkBytes);
    const auto take = [reply, body, tooLarge, limit] {
        if (*tooLarge)
            return;
        if (body->size() + reply->bytesAvailable() > limit) {
            *tooLarge = true;
            reply->abort();
            return;
        }
        body->append(reply->readAll());
    };
    connect(reply, &QNetworkReply::readyRead, this, take);
    connect(reply, &QNetworkReply::finished, this,
            [reply, body, tooLarge, limit, take, done = std::move(done)] {
                take();
                HttpReply r;
                r.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
                r.body = std::move(*body);
                r.retryAfter = reply->rawHeader("Retry-After");
                if (*tooLarge) {
                    r.status = 0;
                    r.body.clear();
                    r.networkError = QStringLiteral("the coordinator's answer to %1 is over %2 MiB; refused")
                                         .arg(reply->url().path())
                                         .arg(limit >> 20);
                } else if (r.status == 0) {
                    r.networkError = reply->errorString();
                }
                reply->deleteLater();
                done(r);
            });
}

void CoordinatorClient::get(const QString& path, Callback done, int timeoutMs) {
    watch(m_network.get(request(path, timeoutMs)), std::move(done));
}

void CoordinatorClient::postJson(const QString& path, const QJsonObject& body, Callback done, int timeoutMs) {
    QNetworkRequest r = request(path, timeoutMs);
    r.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    watch(m_network.post(r, QJsonDocument(body).toJson(QJsonDocument::Compact)), std::move(done));
}

} // namespace tessera::node
