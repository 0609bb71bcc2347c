// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorHttp: the coordinator process tests' HTTP client: requests, test claims, admission.

#include <QByteArray>
#include <QJsonObject>
#include <QMap>
#include <QNetworkReply>
#include <QString>

class QNetworkAccessManager;
class QSslConfiguration;

namespace tessera {
class Identity;
}

namespace tessera::test {

struct HttpReply {
    int status = 0; // 0: no HTTP response (timeout, TLS or connection failure)
    QByteArray body;
    QMap<QByteArray, QByteArray> headers; // lowercase names
    QNetworkReply::NetworkError networkError = QNetworkReply::NoError;
    QJsonObject json() const;
    QString error() const; // the JSON body's "error"
};

// One request, waited for with the event loop running; a JSON content type when body is not null.
HttpReply httpRequest(QNetworkAccessManager& net, const QSslConfiguration& ssl, const QString& url,
                      const QByteArray& method = "GET", const QByteArray& body = QByteArray(),
                      int timeoutMs = 30'000);

// The claims a test node makes: a CPU with memoryBytes, and its benchmark.
QJsonObject testHardware(qint64 memoryBytes = qint64(8) << 30);
QJsonObject testBench(double gflops = 50.0);

// challenge → makeAdmissionRequest → POST /v1/admission; the challenge's reply when it fails. The
// signed request body goes to *request, for replays and tampering.
HttpReply admitNode(QNetworkAccessManager& net, const QSslConfiguration& ssl, const QString& base,
                    const Identity& id, QJsonObject* request = nullptr,
                    const QJsonObject& hardware = testHardware(),
                    const QString& clientVersion = QStringLiteral("0.2.0"));

} // namespace tessera::test
