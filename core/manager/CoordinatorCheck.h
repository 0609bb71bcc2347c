// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorCheck: before anything else of joining (before the benchmark), does a Tessera
// coordinator answer at this address, and is its certificate trusted? One GET /v1/info, trusting
// the system's authorities plus the configured certificate file. Each outcome says, in plain
// words, what is wrong and what fixes it; the technical text is kept apart for a "Details" view.
//
// A certificate no trusted authority signed (a self-signed coordinator) comes back Untrusted with
// the certificate and its SHA-256 fingerprint: the app asks "Trust this coordinator?" and, when
// the user says yes, pin() writes it to a file that becomes the certificate file (trust on first
// use; a later different certificate is refused again).

#include <QObject>
#include <QSslCertificate>
#include <QString>

#include "base/Result.h"

class QNetworkAccessManager;
class QNetworkReply;

namespace tessera::manager {

class CoordinatorCheck final : public QObject {
    Q_OBJECT

public:
    enum class Outcome {
        Ok,              // a Tessera coordinator answered over a trusted connection
        BadAddress,      // the address is not an https:// URL with a host
        Unreachable,     // nobody answered: refused, no such host, timed out, network down
        Untrusted,       // TLS: its certificate is signed by nobody trusted here (certificate set)
        WrongName,       // TLS: the certificate (trusted) is for another name than the address
        NotACoordinator, // something answered, but not a Tessera coordinator
    };
    Q_ENUM(Outcome)

    struct Answer {
        Outcome outcome = Outcome::Unreachable;
        QString message;             // for the user: what is wrong and what to do
        QString details;             // the technical text (Qt's error, the status code)
        QSslCertificate certificate; // Untrusted, WrongName: what the coordinator presented
        QString model;               // Ok: the run's model ("tiny", "8b", …)
    };

    static constexpr int kTimeoutMs = 10'000;

    explicit CoordinatorCheck(QObject* parent = nullptr);
    ~CoordinatorCheck() override;

    // Starts a check (one at a time: a check in flight is dropped); finished() answers.
    void check(const QString& url, const QString& caFile);
    bool running() const { return m_reply != nullptr; }

    // "AB:CD:…": the SHA-256 of the certificate, as browsers and `openssl x509 -fingerprint` show it.
    static QString fingerprint(const QSslCertificate& certificate);
    // Writes `certificate` as PEM to dir/coordinator-HOST-PORT.pem (created 0600, replacing an
    // older one for that address) and returns the path.
    static Result<QString> pin(const QSslCertificate& certificate, const QString& dir, const QString& url);

Q_SIGNALS:
    void finished(const tessera::manager::CoordinatorCheck::Answer& answer);

private:
    void finish(QNetworkReply* reply);
    // The answer when TLS complained (m_sslErrors): untrusted, for another name, or failed.
    Answer tlsFailure(QNetworkReply* reply, const QString& host, const QString& where) const;
    // The answer when nobody answered at all (no HTTP status), by the network's error.
    Answer unreachable(QNetworkReply* reply, const QString& host, const QString& where) const;
    void answer(Answer a);
    void answerLater(Answer a);

    QNetworkAccessManager* m_network;
    QNetworkReply* m_reply = nullptr;
    QString m_url;
    QSslCertificate m_presented; // the certificate of the reply in flight, when TLS complained
    bool m_untrusted = false;    // it was signed by nobody trusted
    bool m_wrongName = false;    // it does not name the host
    bool m_hadCaFile = false;    // a certificate was already trusted for the coordinator
    QString m_sslErrors;
};

} // namespace tessera::manager
