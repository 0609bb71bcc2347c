// SPDX-License-Identifier: Apache-2.0
#pragma once
// ChallengeNonce: stateless admission challenges. A nonce is 8 random bytes, its expiry (u64 ms,
// big-endian) and the first 16 bytes of HMAC-SHA-256(secret, "tessera-nonce-v1" · random · expiry
// · node key), base64url: issuing one writes nothing, and checking one (its MAC, its key, its
// expiry) reads nothing. Only a nonce that passes, under a valid signature, is then recorded as
// spent (NonceStore::spend), which refuses its replay.
//
// The secret is derived from the coordinator's key (secretFrom: a deterministic Ed25519 signature),
// so it survives a restart and nonces issued before one stay valid until they expire.

#include "coordinator/store/NonceStore.h"

#include <QByteArray>
#include <QString>

namespace tessera {
class Identity;
}

namespace tessera::coordinator {

class ChallengeNonce final {
public:
    // An empty secret is replaced by a random one (nonces then die with the process).
    explicit ChallengeNonce(QByteArray secret);

    QString issue(const QString& nodeKey, qint64 expiresAtMs) const;

    struct Checked {
        NonceVerdict verdict = NonceVerdict::Unknown; // Spent here means "authentic and in time"
        qint64 expiresAtMs = 0;
    };
    // Unknown: not a nonce of this form; ForeignKey: its MAC does not verify for nodeKey (issued to
    // another key, or by no one); Expired; else Spent (not yet recorded: the caller spends it).
    Checked check(const QString& nonce, const QString& nodeKey, qint64 nowMs) const;

    // 32 bytes only the holder of `key` can compute, the same at every start.
    static QByteArray secretFrom(const Identity& key);

private:
    QByteArray mac(QByteArrayView random, QByteArrayView expiry, const QString& nodeKey) const;

    QByteArray m_secret;
};

} // namespace tessera::coordinator
