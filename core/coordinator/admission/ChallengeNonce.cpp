// SPDX-License-Identifier: Apache-2.0
#include "coordinator/admission/ChallengeNonce.h"

#include "common/Identity.h"

#include <QCryptographicHash>
#include <QMessageAuthenticationCode>
#include <QRandomGenerator>
#include <QtEndian>

#include <array>

namespace tessera::coordinator {

namespace {

constexpr qsizetype kRandomBytes = 8;
constexpr qsizetype kExpiryBytes = 8;
constexpr qsizetype kMacBytes = 16;
constexpr qsizetype kNonceBytes = kRandomBytes + kExpiryBytes + kMacBytes; // 32

QByteArray randomBytes(qsizetype n) {
    QByteArray out(n, Qt::Uninitialized);
    QRandomGenerator::system()->fillRange(reinterpret_cast<quint32*>(out.data()), n / 4);
    return out;
}

// Compares all of both, so the time taken does not say how much of a forged MAC was right.
bool sameBytes(QByteArrayView a, QByteArrayView b) {
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

} // namespace

ChallengeNonce::ChallengeNonce(QByteArray secret)
    : m_secret(secret.isEmpty() ? randomBytes(32) : std::move(secret)) {}

QByteArray ChallengeNonce::secretFrom(const Identity& key) {
    // Ed25519 signatures are deterministic (RFC 8032): the same key signs this to the same bytes.
    return QCryptographicHash::hash(key.sign(QByteArrayLiteral("tessera-admission-nonce-secret-v1")),
                                    QCryptographicHash::Sha256);
}

QByteArray ChallengeNonce::mac(QByteArrayView random, QByteArrayView expiry, const QString& nodeKey) const {
    QMessageAuthenticationCode code(QCryptographicHash::Sha256, m_secret);
    code.addData(QByteArrayLiteral("tessera-nonce-v1"));
    code.addData(random.data(), random.size());
    code.addData(expiry.data(), expiry.size());
    code.addData(nodeKey.toUtf8());
    return code.result().left(kMacBytes);
}

QString ChallengeNonce::issue(const QString& nodeKey, qint64 expiresAtMs) const {
    const QByteArray random = randomBytes(kRandomBytes);
    QByteArray expiry(kExpiryBytes, Qt::Uninitialized);
    qToBigEndian(quint64(expiresAtMs), expiry.data());
    return Identity::toBase64Url(random + expiry + mac(random, expiry, nodeKey));
}

ChallengeNonce::Checked ChallengeNonce::check(const QString& nonce, const QString& nodeKey,
                                              qint64 nowMs) const {
    const Result<QByteArray> bytes = Identity::fromBase64Url(nonce, kNonceBytes);
    if (!bytes)
        return {NonceVerdict::Unknown, 0};
    const QByteArrayView all(*bytes);
    const QByteArrayView random = all.first(kRandomBytes);
    const QByteArrayView expiry = all.sliced(kRandomBytes, kExpiryBytes);
    if (!sameBytes(all.last(kMacBytes), mac(random, expiry, nodeKey)))
        return {NonceVerdict::ForeignKey, 0};
    const qint64 expiresAt = qint64(qFromBigEndian<quint64>(expiry.data()));
    if (expiresAt <= nowMs)
        return {NonceVerdict::Expired, expiresAt};
    return {NonceVerdict::Spent, expiresAt};
}

} // namespace tessera::coordinator
