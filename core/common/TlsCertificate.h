// SPDX-License-Identifier: Apache-2.0
#pragma once
// TlsCertificate: the coordinator's TLS certificate and key, loaded from PEM files or, when the
// operator gives none, self-signed on first start.

#include "base/Result.h"

#include <QList>
#include <QSslCertificate>
#include <QSslKey>
#include <QString>
#include <QStringList>

namespace tessera {

class TlsCertificate final {
public:
    // Loads both files when both exist. Otherwise makes an EC P-256 key (0600, written like an
    // Identity key) and a self-signed certificate valid for ten years whose subjectAltName
    // lists `hostNames`: DNS names and IP addresses, e.g. {"localhost", "127.0.0.1"}; empty
    // means localhost, 127.0.0.1 and ::1. The names only matter at creation: delete both files
    // to issue a certificate for new names. Refuses to create one file when the other exists.
    static Result<TlsCertificate> loadOrCreate(const QString& certPath, const QString& keyPath,
                                               const QStringList& hostNames = {});

    // `certPath` may hold a chain (leaf first, as Let's Encrypt's fullchain.pem); `keyPath` an
    // unencrypted RSA or EC key that matches the leaf, not accessible to other users (group
    // access is accepted, for Debian's ssl-cert group).
    static Result<TlsCertificate> load(const QString& certPath, const QString& keyPath);

    QSslCertificate certificate() const { return m_chain.first(); }
    QList<QSslCertificate> certificateChain() const { return m_chain; } // leaf first
    QSslKey privateKey() const { return m_key; }

    // SHA-256 of the leaf's DER, as `openssl x509 -fingerprint -sha256` prints it: "AB:CD:...".
    QString sha256Fingerprint() const;

private:
    TlsCertificate(QList<QSslCertificate> chain, QSslKey key);

    QList<QSslCertificate> m_chain; // never empty
    QSslKey m_key;
};

} // namespace tessera
