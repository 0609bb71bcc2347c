// SPDX-License-Identifier: Apache-2.0
#include "manager/SwarmStatusClient.h"

#include "manager/CoordinatorRequest.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QSslError>
#include <QStringList>
#include <QUrl>

#include <utility>

namespace tessera::manager {

namespace {

constexpr int kTimeoutMs = 15'000;

} // namespace

SwarmStatusClient::SwarmStatusClient(QObject* parent)
    : QObject(parent)
    , m_network(new QNetworkAccessManager(this)) {}

SwarmStatusClient::~SwarmStatusClient() {
    // The manager deletes the reply with itself; no signal of it may reach a half-destroyed this.
    if (m_reply)
        m_reply->disconnect(this);
}

void SwarmStatusClient::setCoordinator(const QString& url, const QString& caFile) {
    const QString base = coordinatorBase(url);
    if (base == m_url && caFile == m_caFile)
        return;
    m_url = base;
    m_caFile = caFile;
    m_status = QJsonObject(); // another coordinator's swarm is not this one's
    // A kept connection would keep the trust it was made with: a certificate set after a refusal
    // must be used at the next refresh, not after a restart.
    m_network->clearConnectionCache();
    if (m_reply) {
        // The answer in flight is about the old coordinator: drop it unheard.
        QNetworkReply* old = std::exchange(m_reply, nullptr);
        old->disconnect(this);
        old->abort();
        old->deleteLater();
    }
}

void SwarmStatusClient::refresh() {
    if (m_reply)
        return;
    const QUrl url(m_url + QStringLiteral("/v1/status"));
    if (m_url.isEmpty() || !isCoordinatorUrl(url)) {
        fail(m_url.isEmpty()
                 ? QStringLiteral("no coordinator is set")
                 : QStringLiteral("%1 is not a coordinator URL (expected https://HOST:PORT)").arg(m_url));
        return;
    }
    // Trusted: the system's certificates and, for a self-signed coordinator, the given file.
    const Result<QNetworkRequest> request = coordinatorRequest(url, m_caFile, kTimeoutMs);
    if (!request) {
        fail(QString::fromStdString(request.message()));
        return;
    }
    m_sslErrors.clear();
    QNetworkReply* reply = m_network->get(*request);
    m_reply = reply;
    connect(reply, &QNetworkReply::sslErrors, this, [this](const QList<QSslError>& errors) {
        QStringList why;
        for (const QSslError& e : errors)
            why.append(e.errorString());
        m_sslErrors = why.join(QStringLiteral("; "));
    });
    m_tooLarge = false;
    connect(reply, &QNetworkReply::downloadProgress, this, [this, reply](qint64 received, qint64 total) {
        if (received > kMaxReplyBytes || total > kMaxReplyBytes) {
            m_tooLarge = true;
            reply->abort();
        }
    });
    connect(reply, &QNetworkReply::finished, this, [this, reply] { finish(reply); });
}

void SwarmStatusClient::finish(QNetworkReply* reply) {
    m_reply = nullptr;
    reply->deleteLater();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QByteArray body = reply->read(kMaxReplyBytes + 1);
    const QString where = QStringLiteral("the coordinator at %1").arg(m_url);
    if (m_tooLarge || body.size() > kMaxReplyBytes) {
        fail(
            QStringLiteral("%1 sent a status larger than %2 MiB; it is not a Tessera coordinator, or a proxy "
                           "is in the way")
                .arg(where)
                .arg(kMaxReplyBytes >> 20));
        return;
    }
    switch (reply->error()) {
    case QNetworkReply::NoError:
    case QNetworkReply::ContentAccessDenied:
    case QNetworkReply::ContentNotFoundError:
    case QNetworkReply::ContentOperationNotPermittedError:
    case QNetworkReply::InternalServerError:
    case QNetworkReply::ServiceUnavailableError:
    case QNetworkReply::UnknownContentError:
    case QNetworkReply::UnknownServerError:
    case QNetworkReply::ProtocolInvalidOperationError:
        break; // an HTTP answer: the status code below says more
    case QNetworkReply::ConnectionRefusedError:
        fail(QStringLiteral("cannot reach %1: the connection was refused (is the coordinator running?)")
                 .arg(where));
        return;
    case QNetworkReply::HostNotFoundError:
        fail(QStringLiteral("cannot reach %1: host not found (check the address)").arg(where));
        return;
    case QNetworkReply::TimeoutError:
    case QNetworkReply::OperationCanceledError:
        fail(QStringLiteral("%1 did not answer within %2 s").arg(where).arg(kTimeoutMs / 1000));
        return;
    case QNetworkReply::SslHandshakeFailedError:
        fail(QStringLiteral("the TLS connection to %1 failed: %2 (check the coordinator's certificate file)")
                 .arg(where, m_sslErrors.isEmpty() ? reply->errorString() : m_sslErrors));
        return;
    default:
        if (status == 0) {
            fail(QStringLiteral("cannot reach %1: %2").arg(where, reply->errorString()));
            return;
        }
    }
    if (status != 200) {
        // The coordinator's errors are {"error": "..."}; anything else is shown by its code only.
        const QString said = QJsonDocument::fromJson(body).object().value(u"error").toString();
        fail(QStringLiteral("%1 answered HTTP %2 to /v1/status%3")
                 .arg(where)
                 .arg(status)
                 .arg(said.isEmpty() ? QString() : QStringLiteral(": ") + said));
        return;
    }
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(body, &parseError);
    if (parseError.error != QJsonParseError::NoError || !doc.isObject()) {
        fail(QStringLiteral(
                 "%1 sent a status that is not a JSON object%2; it may not be a Tessera coordinator")
                 .arg(where, parseError.error != QJsonParseError::NoError
                                 ? QStringLiteral(" (%1)").arg(parseError.errorString())
                                 : QString()));
        return;
    }
    m_status = doc.object();
    m_error.clear();
    Q_EMIT statusChanged(m_status);
}

void SwarmStatusClient::fail(const QString& error) {
    m_error = error;
    Q_EMIT failed(error);
}

} // namespace tessera::manager
