// SPDX-License-Identifier: Apache-2.0
// CoordinatorRequest: one place for the app's requests to its coordinator.
#include "manager/CoordinatorRequest.h"

#include <QSslCertificate>
#include <QSslConfiguration>

namespace tessera::manager {

QString coordinatorBase(const QString& url) {
    QString base = url.trimmed();
    while (base.endsWith(u'/'))
        base.chop(1);
    return base;
}

bool isCoordinatorUrl(const QUrl& url) {
    return url.isValid() && !url.host().isEmpty() && (url.scheme() == u"https" || url.scheme() == u"http");
}

Result<QNetworkRequest> coordinatorRequest(const QUrl& url, const QString& caFile, int timeoutMs) {
    QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
    if (!caFile.isEmpty()) {
        const QList<QSslCertificate> certs = QSslCertificate::fromPath(caFile, QSsl::Pem);
        if (certs.isEmpty())
            return makeError(QStringLiteral("no PEM certificate in the coordinator's certificate file %1")
                                 .arg(caFile)
                                 .toStdString());
        ssl.addCaCertificates(certs);
    }
    QNetworkRequest request(url);
    request.setSslConfiguration(ssl);
    request.setTransferTimeout(timeoutMs);
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    request.setRawHeader("Accept", "application/json");
    return request;
}

} // namespace tessera::manager
