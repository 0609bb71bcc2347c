// SPDX-License-Identifier: Apache-2.0
// CoordinatorCheck: GET /v1/info, its TLS errors sorted into what the user can act on.
#include "manager/CoordinatorCheck.h"

#include "manager/CoordinatorRequest.h"

#include <QCryptographicHash>
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QSaveFile>
#include <QSslError>
#include <QUrl>

namespace tessera::manager {

namespace {

constexpr qint64 kMaxInfoBytes = 64 * 1024;

} // namespace

CoordinatorCheck::CoordinatorCheck(QObject* parent)
    : QObject(parent)
    , m_network(new QNetworkAccessManager(this)) {
    qRegisterMetaType<Answer>();
}

CoordinatorCheck::~CoordinatorCheck() = default;

QString CoordinatorCheck::fingerprint(const QSslCertificate& certificate) {
    return QString::fromLatin1(certificate.digest(QCryptographicHash::Sha256).toHex(':').toUpper());
}

Result<QString> CoordinatorCheck::pin(const QSslCertificate& certificate, const QString& dir,
                                      const QString& url) {
    const QUrl u(coordinatorBase(url));
    if (certificate.isNull() || u.host().isEmpty())
        return makeError("no certificate or no host to pin it for");
    QString host = u.host();
    host.replace(QLatin1Char(':'), QLatin1Char('_')); // an IPv6 address
    const QString path =
        QDir(dir).filePath(QStringLiteral("coordinator-%1-%2.pem").arg(host).arg(u.port(443)));
    if (!QDir().mkpath(dir))
        return makeError(QStringLiteral("cannot create %1").arg(dir).toStdString());
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return makeError(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()).toStdString());
    file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    file.write(certificate.toPem());
    if (!file.flush() || !file.commit())
        return makeError(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()).toStdString());
    return path;
}

void CoordinatorCheck::check(const QString& url, const QString& caFile) {
    if (m_reply) {
        QNetworkReply* old = std::exchange(m_reply, nullptr);
        old->disconnect(this);
        old->abort();
        old->deleteLater();
    }
    m_url = coordinatorBase(url);
    const QUrl info(m_url + QStringLiteral("/v1/info"));
    if (m_url.isEmpty() || !isCoordinatorUrl(info)) {
        Answer a;
        a.outcome = Outcome::BadAddress;
        a.message = tr("“%1” is not a coordinator address. An address looks like "
                       "https://coordinator.example.org:7443")
                        .arg(url.trimmed());
        return answerLater(a);
    }
    const Result<QNetworkRequest> request = coordinatorRequest(info, caFile, kTimeoutMs);
    if (!request) {
        Answer a;
        a.outcome = Outcome::Untrusted;
        a.message = tr("The certificate file set for the coordinator cannot be read. Choose it again "
                       "in Settings, or clear it.");
        a.details = QString::fromStdString(request.message());
        return answerLater(a);
    }
    m_presented = QSslCertificate();
    m_untrusted = m_wrongName = false;
    m_hadCaFile = !caFile.isEmpty();
    m_sslErrors.clear();
    // A connection kept from the last check would keep the trust it was made with.
    m_network->clearConnectionCache();
    QNetworkReply* reply = m_network->get(*request);
    m_reply = reply;
    connect(reply, &QNetworkReply::sslErrors, this, [this](const QList<QSslError>& errors) {
        QStringList why;
        for (const QSslError& e : errors) {
            why.append(e.errorString());
            switch (e.error()) {
            case QSslError::HostNameMismatch:
                m_wrongName = true;
                break;
            case QSslError::SelfSignedCertificate:
            case QSslError::SelfSignedCertificateInChain:
            case QSslError::UnableToGetLocalIssuerCertificate:
            case QSslError::UnableToGetIssuerCertificate:
            case QSslError::UnableToVerifyFirstCertificate:
            case QSslError::CertificateUntrusted:
                m_untrusted = true;
                break;
            default:
                break;
            }
            if (!e.certificate().isNull() && m_presented.isNull())
                m_presented = e.certificate();
        }
        m_sslErrors = why.join(QStringLiteral("; "));
    });
    connect(reply, &QNetworkReply::downloadProgress, this, [reply](qint64 received, qint64 total) {
        if (received > kMaxInfoBytes || total > kMaxInfoBytes)
            reply->abort();
    });
    connect(reply, &QNetworkReply::finished, this, [this, reply] { finish(reply); });
}

void CoordinatorCheck::finish(QNetworkReply* reply) {
    m_reply = nullptr;
    reply->deleteLater();
    const QUrl url(m_url);
    const QString where =
        url.port() > 0 ? QStringLiteral("%1:%2").arg(url.host()).arg(url.port()) : url.host();
    if (!m_sslErrors.isEmpty())
        return answer(tlsFailure(reply, url.host(), where));
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply->error() != QNetworkReply::NoError && status == 0)
        return answer(unreachable(reply, url.host(), where));
    Answer a;
    const QJsonObject info = QJsonDocument::fromJson(reply->read(kMaxInfoBytes + 1)).object();
    if (status != 200 || info.value(u"name").toString() != u"tessera-coordinator") {
        a.outcome = Outcome::NotACoordinator;
        a.message = tr("Something answers at %1, but it is not a Tessera coordinator. Check the address "
                       "your swarm's operator gave you.")
                        .arg(where);
        a.details = tr("HTTP status %1 for /v1/info").arg(status);
        return answer(a);
    }
    a.outcome = Outcome::Ok;
    a.model = info.value(u"model").toObject().value(u"name").toString();
    a.message = tr("The coordinator at %1 answers.").arg(where);
    answer(a);
}

CoordinatorCheck::Answer CoordinatorCheck::tlsFailure(QNetworkReply* reply, const QString& host,
                                                      const QString& where) const {
    Answer a;
    a.details = m_sslErrors;
    a.certificate = m_presented.isNull() ? reply->sslConfiguration().peerCertificate() : m_presented;
    if (m_untrusted) {
        a.outcome = Outcome::Untrusted;
        // A certificate trusted for this coordinator, and it presents another: someone may stand
        // between, so the words warn before they offer.
        a.message =
            m_hadCaFile
                ? tr("The coordinator at %1 presents a different certificate from the one this "
                     "computer trusts for it. Trust the new one only if your swarm's operator told "
                     "you it changed and its fingerprint matches the one below; otherwise someone "
                     "may be impersonating the coordinator.")
                      .arg(where)
                : tr("The coordinator at %1 uses a certificate that no authority this computer trusts "
                     "has signed. If your swarm's operator gave you its fingerprint and it matches "
                     "the one below, you can trust this coordinator.")
                      .arg(where);
    } else if (m_wrongName) {
        a.outcome = Outcome::WrongName;
        a.message = tr("The coordinator's certificate is not made out for %1. Use the address your "
                       "swarm's operator gave you (the name in the certificate: %2).")
                        .arg(host, a.certificate.subjectAlternativeNames().values().join(u", "));
    } else {
        a.outcome = Outcome::Untrusted;
        a.message = tr("The secure connection to the coordinator at %1 failed. Check the computer's "
                       "date and time, then try again.")
                        .arg(where);
    }
    return a;
}

CoordinatorCheck::Answer CoordinatorCheck::unreachable(QNetworkReply* reply, const QString& host,
                                                       const QString& where) const {
    Answer a;
    a.details = reply->errorString();
    a.outcome = Outcome::Unreachable;
    switch (reply->error()) {
    case QNetworkReply::HostNotFoundError:
        a.message = tr("There is no computer named %1. Check the address for typing mistakes.").arg(host);
        break;
    case QNetworkReply::TimeoutError:
    case QNetworkReply::OperationCanceledError:
        a.message = tr("The coordinator at %1 did not answer within %2 seconds. Check the address and "
                       "this computer's internet connection, then try again.")
                        .arg(where)
                        .arg(kTimeoutMs / 1000);
        break;
    case QNetworkReply::ConnectionRefusedError:
        a.message = tr("Nothing answers at %1: the coordinator is not running there, or the address "
                       "or port is wrong. Check the address, then try again.")
                        .arg(where);
        break;
    default:
        a.message = tr("The coordinator at %1 cannot be reached. Check the address and this computer's "
                       "internet connection, then try again.")
                        .arg(where);
        break;
    }
    return a;
}

void CoordinatorCheck::answer(Answer a) {
    Q_EMIT finished(a);
}

void CoordinatorCheck::answerLater(Answer a) {
    // Never from inside check(): its caller is still setting up.
    QMetaObject::invokeMethod(
        this, [this, a = std::move(a)] { answer(a); }, Qt::QueuedConnection);
}

} // namespace tessera::manager
