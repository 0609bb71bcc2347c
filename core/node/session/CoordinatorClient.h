// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorClient: the node's HTTP(S) requests to its coordinator (info, admission, manifests,
// credits), each answered through a callback on the caller's thread.

#include "base/Result.h"

#include <QByteArray>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QObject>
#include <QSslConfiguration>
#include <QUrl>

#include <functional>

namespace tessera::node {

struct HttpReply {
    int status = 0;       // 0: no HTTP answer (refused, reset, TLS failure, timeout)
    QString networkError; // why, when status is 0
    QByteArray body;
    QByteArray retryAfter; // the Retry-After header, if any

    QJsonObject json() const;
    // The coordinator's {"error": …} message, or the network error, for logs and status.
    QString describe() const;
    bool ok() const { return status >= 200 && status < 300; }
};

class CoordinatorClient final : public QObject {
    Q_OBJECT

public:
    using Callback = std::function<void(const HttpReply&)>;

    // The largest answer the node reads (a credits page of 1,000 receipts is about 1 MiB, an 8B
    // stage's manifest a few KiB); a longer one is cut off and reads as a network error.
    static constexpr qint64 kMaxReplyBytes = qint64(16) << 20;
    static constexpr qint64 kReadChunkBytes = qint64(256) << 10;

    // base: https://host:port, or http:// to a loopback host only (checked by checkUrl).
    // extraCaCertificates: trusted in addition to the system's (a self-hosted coordinator).
    CoordinatorClient(QUrl base, const QString& caFile, QObject* parent = nullptr);

    // Refuses what the node must not talk to: not http(s), or plain http off loopback.
    static Status checkUrl(const QUrl& url);
    // Loads extra CA certificates (PEM); an error names the file.
    Status loadCa();

    void get(const QString& path, Callback done, int timeoutMs = 30'000);
    void postJson(const QString& path, const QJsonObject& body, Callback done, int timeoutMs = 30'000);

    // Tests lower it to see a long answer refused.
    void setMaxReplyBytes(qint64 bytes) { m_maxReplyBytes = bytes; }

    const QUrl& base() const { return m_base; }
    QNetworkAccessManager* network() { return &m_network; }
    const QSslConfiguration& ssl() const { return m_ssl; }
    // wss:// or ws:// for the session socket.
    QUrl sessionUrl() const;

private:
    QNetworkRequest request(const QString& path, int timeoutMs) const;
    void watch(class QNetworkReply* reply, Callback done);

    QUrl m_base;
    QString m_caFile;
    QNetworkAccessManager m_network;
    QSslConfiguration m_ssl;
    qint64 m_maxReplyBytes = kMaxReplyBytes;
};

} // namespace tessera::node
