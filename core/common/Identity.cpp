// SPDX-License-Identifier: Apache-2.0
#include "common/Identity.h"

#include "common/KeyFile.h"
#include "common/OpenSsl.h"

#include <openssl/pem.h>

#include <QCryptographicHash>
#include <QFileInfo>

namespace tessera {

namespace {

std::string str(const QString& s) {
    return s.toStdString();
}

const unsigned char* bytes(const QByteArray& data) {
    return reinterpret_cast<const unsigned char*>(data.constData());
}

} // namespace

void Identity::KeyDeleter::operator()(evp_pkey_st* key) const {
    EVP_PKEY_free(key);
}

Identity::Identity(Key key)
    : m_key(std::move(key)) {}

Identity::Identity(const Identity& other)
    : m_publicKey(other.m_publicKey) {
    if (other.m_key && EVP_PKEY_up_ref(other.m_key.get()) == 1)
        m_key.reset(other.m_key.get());
}

Identity& Identity::operator=(const Identity& other) {
    if (this != &other)
        *this = Identity(other);
    return *this;
}

Identity::~Identity() = default;

Result<Identity> Identity::fromKey(Key key) {
    unsigned char raw[kPublicKeySize];
    std::size_t size = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key.get(), raw, &size) != 1 || size != sizeof raw)
        return makeError("cannot read the Ed25519 public key: " + openssl::takeError());
    Identity identity(std::move(key));
    identity.m_publicKey = QByteArray(reinterpret_cast<const char*>(raw), kPublicKeySize);
    return identity;
}

Result<Identity> Identity::generate() {
    openssl::PkeyCtx ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr));
    EVP_PKEY* key = nullptr;
    if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &key) != 1)
        return makeError("cannot generate an Ed25519 key: " + openssl::takeError());
    return fromKey(Key(key));
}

Result<Identity> Identity::load(const QString& path) {
    Result<QByteArray> pem = KeyFile::read(path);
    if (!pem)
        return pem.error();
    openssl::Pkey key = openssl::readPrivateKeyPem(*pem);
    openssl::cleanse(*pem);
    if (!key) {
        openssl::takeError();
        return makeError(str(path) + " is not a PEM private key (expected \"-----BEGIN PRIVATE KEY-----\", "
                                     "unencrypted)");
    }
    if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
        const char* type = EVP_PKEY_get0_type_name(key.get());
        return makeError(str(path) + " holds a key of type " + (type ? type : "unknown") +
                         "; a Tessera identity is an Ed25519 key");
    }
    return fromKey(Key(key.release()));
}

Result<Identity> Identity::loadOrCreate(const QString& path) {
    if (QFileInfo::exists(path))
        return load(path);
    Result<Identity> identity = generate();
    if (!identity)
        return identity;
    QByteArray pem = openssl::privateKeyPem(identity->m_key.get());
    if (pem.isEmpty())
        return makeError("cannot encode the Ed25519 key: " + openssl::takeError());
    const Status written = KeyFile::writeNew(path, pem);
    openssl::cleanse(pem);
    if (!written) {
        // Another process created it first: use that key, the one every later start will find.
        if (QFileInfo::exists(path))
            return load(path);
        return written.error();
    }
    return identity;
}

QByteArray Identity::publicKey() const {
    return m_publicKey;
}

QByteArray Identity::publicKeyPem() const {
    openssl::Bio bio = openssl::memoryWriter();
    if (!m_key || !bio || PEM_write_bio_PUBKEY(bio.get(), m_key.get()) != 1) {
        openssl::takeError();
        return {};
    }
    return openssl::contents(bio.get());
}

QString Identity::publicKeyBase64() const {
    return toBase64Url(m_publicKey);
}

QString Identity::nodeId() const {
    return nodeIdOf(m_publicKey);
}

QString Identity::nodeIdOf(const QByteArray& publicKey) {
    return QString::fromLatin1(QCryptographicHash::hash(publicKey, QCryptographicHash::Sha256).toHex());
}

QByteArray Identity::sign(const QByteArray& message) const {
    openssl::MdCtx ctx(EVP_MD_CTX_new());
    QByteArray signature(kSignatureSize, Qt::Uninitialized);
    std::size_t size = static_cast<std::size_t>(signature.size());
    // Ed25519 hashes internally (PureEdDSA): no digest, and only the one-shot call.
    if (!m_key || !ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, m_key.get()) != 1 ||
        EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size, bytes(message),
                       static_cast<std::size_t>(message.size())) != 1 ||
        size != static_cast<std::size_t>(kSignatureSize)) {
        openssl::takeError();
        return {};
    }
    return signature;
}

bool Identity::verify(const QByteArray& publicKey, const QByteArray& message, const QByteArray& signature) {
    if (publicKey.size() != kPublicKeySize || signature.size() != kSignatureSize)
        return false;
    openssl::Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, bytes(publicKey),
                                                  static_cast<std::size_t>(publicKey.size())));
    openssl::MdCtx ctx(EVP_MD_CTX_new());
    const bool ok = key && ctx &&
                    EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
                    EVP_DigestVerify(ctx.get(), bytes(signature), static_cast<std::size_t>(signature.size()),
                                     bytes(message), static_cast<std::size_t>(message.size())) == 1;
    // A bad signature leaves an entry in the error queue too.
    openssl::takeError();
    return ok;
}

QString Identity::toBase64Url(const QByteArray& bytes) {
    return QString::fromLatin1(
        bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

Result<QByteArray> Identity::fromBase64Url(const QString& text, qsizetype size) {
    const auto options = QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals;
    const QByteArray encoded = text.toLatin1();
    QByteArray::FromBase64Result decoded =
        QByteArray::fromBase64Encoding(encoded, options | QByteArray::AbortOnBase64DecodingErrors);
    // Re-encoding rejects padding, whitespace and stray low bits in the last character.
    if (!decoded || decoded.decoded.toBase64(options) != encoded)
        return makeError("not base64url (RFC 4648 §5, no padding)");
    if (decoded.decoded.size() != size)
        return makeError("expected " + std::to_string(size) + " bytes, got " +
                         std::to_string(decoded.decoded.size()));
    return std::move(decoded.decoded);
}

} // namespace tessera
