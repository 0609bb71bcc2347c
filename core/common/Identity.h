// SPDX-License-Identifier: Apache-2.0
#pragma once
// Identity: an Ed25519 key pair that names a node (or the coordinator) and signs on its behalf.

#include "base/Result.h"

#include <QByteArray>
#include <QString>

#include <memory>

struct evp_pkey_st; // OpenSSL's EVP_PKEY: users of this header need no OpenSSL include path

namespace tessera {

// Copies share one immutable OpenSSL key (reference counted), so an Identity is cheap to copy
// and safe to use from several threads at once.
class Identity final {
public:
    static constexpr qsizetype kPublicKeySize = 32;
    static constexpr qsizetype kSignatureSize = 64;

    static Result<Identity> generate();

    // The key in `path` (PEM PKCS#8, mode 0600); on first use a new key is made and written
    // there atomically, never readable by other users.
    static Result<Identity> loadOrCreate(const QString& path);
    // Refuses a file that other users can access, or that is not an Ed25519 PEM private key.
    static Result<Identity> load(const QString& path);

    QByteArray publicKey() const;    // raw, 32 bytes
    QByteArray publicKeyPem() const; // SubjectPublicKeyInfo ("-----BEGIN PUBLIC KEY-----")
    QString publicKeyBase64() const; // base64url without padding, as carried in JSON
    QString nodeId() const;          // lowercase hex SHA-256 of publicKey()

    // 64 bytes; empty only if OpenSSL fails to allocate.
    QByteArray sign(const QByteArray& message) const;

    // False for a bad signature and for a key or signature of the wrong size; never throws.
    static bool verify(const QByteArray& publicKey, const QByteArray& message, const QByteArray& signature);

    // The node id of any raw public key (the coordinator derives it from `node_key`).
    static QString nodeIdOf(const QByteArray& publicKey);

    // base64url without padding (RFC 4648 §5), for keys and signatures in JSON.
    static QString toBase64Url(const QByteArray& bytes);
    // Strict: only the canonical unpadded encoding of exactly `size` bytes is accepted, so a
    // value has one spelling (keys are compared and hashed as text).
    static Result<QByteArray> fromBase64Url(const QString& text, qsizetype size);

    Identity(const Identity& other);
    Identity& operator=(const Identity& other);
    Identity(Identity&&) noexcept = default;
    Identity& operator=(Identity&&) noexcept = default;
    ~Identity();

private:
    struct KeyDeleter {
        void operator()(evp_pkey_st* key) const;
    };
    using Key = std::unique_ptr<evp_pkey_st, KeyDeleter>;

    explicit Identity(Key key);
    static Result<Identity> fromKey(Key key);

    Key m_key;
    QByteArray m_publicKey;
};

} // namespace tessera
