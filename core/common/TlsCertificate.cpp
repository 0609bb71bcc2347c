// SPDX-License-Identifier: Apache-2.0
#include "common/TlsCertificate.h"

#include "common/KeyFile.h"
#include "common/OpenSsl.h"

#include <openssl/pem.h>

#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSslSocket>
#include <QtEndian>

namespace tessera {

namespace {

constexpr qint64 kMaxCertificateFileBytes = 1024 * 1024;
constexpr long kValidityDays = 3650;
// Valid from a day before it was made: a node whose clock is behind the coordinator's (stepped back an
// hour, a wrong time zone setting) must not find the certificate "not yet valid".
constexpr long kValidBeforeSeconds = -86400;

std::string str(const QString& s) {
    return s.toStdString();
}

Result<QByteArray> readCertificateFile(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return makeError("cannot open certificate file " + str(path) + ": " + str(file.errorString()));
    if (file.size() > kMaxCertificateFileBytes)
        return makeError("certificate file " + str(path) + " is larger than 1 MiB");
    return file.read(kMaxCertificateFileBytes + 1);
}

// One subjectAltName entry; built field by field, never from a config string a name could
// extend with a comma.
Result<openssl::GeneralName> altName(const QString& hostName) {
    openssl::GeneralName name(GENERAL_NAME_new());
    if (!name)
        return makeError("out of memory");
    QHostAddress address;
    if (address.setAddress(hostName)) {
        QByteArray raw;
        if (address.protocol() == QAbstractSocket::IPv4Protocol) {
            const quint32 v4 = qToBigEndian(address.toIPv4Address());
            raw = QByteArray(reinterpret_cast<const char*>(&v4), sizeof v4);
        } else {
            const Q_IPV6ADDR v6 = address.toIPv6Address();
            raw = QByteArray(reinterpret_cast<const char*>(v6.c), sizeof v6.c);
        }
        ASN1_OCTET_STRING* value = ASN1_OCTET_STRING_new();
        if (!value || ASN1_OCTET_STRING_set(value, reinterpret_cast<const unsigned char*>(raw.constData()),
                                            static_cast<int>(raw.size())) != 1) {
            ASN1_OCTET_STRING_free(value);
            return makeError("out of memory");
        }
        GENERAL_NAME_set0_value(name.get(), GEN_IPADD, value);
        return name;
    }
    // RFC 1123 labels, with an optional leading wildcard label.
    static const QRegularExpression dnsName(QStringLiteral(
        R"(^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$)"));
    if (hostName.size() > 253 || !dnsName.match(hostName).hasMatch())
        return makeError("certificate host name \"" + str(hostName) +
                         "\" is neither a DNS name nor an IP address");
    const QByteArray ascii = hostName.toLower().toLatin1();
    ASN1_IA5STRING* value = ASN1_IA5STRING_new();
    if (!value || ASN1_STRING_set(value, ascii.constData(), static_cast<int>(ascii.size())) != 1) {
        ASN1_IA5STRING_free(value);
        return makeError("out of memory");
    }
    GENERAL_NAME_set0_value(name.get(), GEN_DNS, value);
    return name;
}

bool addExtension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
    const bool ok = ext && X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

// A self-signed P-256 certificate, as {certificate PEM, private key PEM}.
Result<std::pair<QByteArray, QByteArray>> issue(const QStringList& hostNames) {
    openssl::GeneralNames names(sk_GENERAL_NAME_new_null());
    if (!names)
        return makeError("out of memory");
    for (const QString& hostName : hostNames) {
        Result<openssl::GeneralName> name = altName(hostName.trimmed());
        if (!name)
            return name.error();
        if (sk_GENERAL_NAME_push(names.get(), name->get()) <= 0)
            return makeError("out of memory");
        name->release();
    }

    openssl::Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
    openssl::X509Ptr cert(X509_new());
    openssl::Bignum serial(BN_new());
    if (!key || !cert || !serial)
        return makeError("cannot generate a P-256 key: " + openssl::takeError());

    X509_NAME* subject = X509_get_subject_name(cert.get());
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    // A random 159-bit serial (positive, within RFC 5280's 20 octets). The validity starts an
    // hour back to forgive clients whose clocks run slow. No keyUsage: with one lacking
    // keyCertSign OpenSSL no longer treats the certificate as self-signed and the clients that
    // trust it directly fail to build the chain.
    const bool built =
        X509_set_version(cert.get(), X509_VERSION_3) == 1 &&
        BN_rand(serial.get(), 159, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
        BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr &&
        X509_gmtime_adj(X509_getm_notBefore(cert.get()), kValidBeforeSeconds) != nullptr &&
        X509_time_adj_ex(X509_getm_notAfter(cert.get()), kValidityDays, 0, nullptr) != nullptr &&
        X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>("Tessera"), -1, -1, 0) == 1 &&
        X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>("Tessera coordinator"), -1, -1,
                                   0) == 1 &&
        X509_set_issuer_name(cert.get(), subject) == 1 && X509_set_pubkey(cert.get(), key.get()) == 1 &&
        addExtension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
        addExtension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth") &&
        addExtension(cert.get(), &ctx, NID_subject_key_identifier, "hash") &&
        X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) == 1 &&
        X509_sign(cert.get(), key.get(), EVP_sha256()) > 0;
    if (!built)
        return makeError("cannot build the self-signed certificate: " + openssl::takeError());

    openssl::Bio certPem = openssl::memoryWriter();
    if (!certPem || PEM_write_bio_X509(certPem.get(), cert.get()) != 1)
        return makeError("cannot encode the certificate: " + openssl::takeError());
    QByteArray keyPem = openssl::privateKeyPem(key.get());
    if (keyPem.isEmpty())
        return makeError("cannot encode the private key: " + openssl::takeError());
    return std::pair{openssl::contents(certPem.get()), std::move(keyPem)};
}

Status create(const QString& certPath, const QString& keyPath, const QStringList& hostNames) {
    Result<std::pair<QByteArray, QByteArray>> issued = issue(hostNames);
    if (!issued)
        return issued.error();
    auto& [certPem, keyPem] = *issued;
    const Status keyWritten = KeyFile::writeNew(keyPath, keyPem);
    openssl::cleanse(keyPem);
    if (!keyWritten)
        return keyWritten;
    QSaveFile file(certPath);
    if (!file.open(QIODevice::WriteOnly) || file.write(certPem) != certPem.size() || !file.flush() ||
        !file.commit()) {
        // Without its certificate the new key is useless, and would block the next start.
        QFile::remove(keyPath);
        return makeError("cannot write " + str(certPath) + ": " + str(file.errorString()));
    }
    return {};
}

} // namespace

TlsCertificate::TlsCertificate(QList<QSslCertificate> chain, QSslKey key)
    : m_chain(std::move(chain))
    , m_key(std::move(key)) {}

Result<TlsCertificate> TlsCertificate::loadOrCreate(const QString& certPath, const QString& keyPath,
                                                    const QStringList& hostNames) {
    const bool haveCert = QFileInfo::exists(certPath);
    const bool haveKey = QFileInfo::exists(keyPath);
    if (haveCert != haveKey) {
        const QString present = haveCert ? certPath : keyPath;
        const QString missing = haveCert ? keyPath : certPath;
        return makeError("found " + str(present) + " but not " + str(missing) + ": give both, or remove " +
                         str(present) + " to have a new self-signed certificate made");
    }
    if (!haveCert) {
        const QStringList names =
            hostNames.isEmpty()
                ? QStringList{QStringLiteral("localhost"), QStringLiteral("127.0.0.1"), QStringLiteral("::1")}
                : hostNames;
        if (Status created = create(certPath, keyPath, names); !created)
            return created.error();
    }
    // Read back what is on disk: the same path every later start takes.
    return load(certPath, keyPath);
}

Result<TlsCertificate> TlsCertificate::load(const QString& certPath, const QString& keyPath) {
    if (!QSslSocket::supportsSsl())
        return makeError("Qt's TLS backend is not available (is OpenSSL 3 installed?)");

    Result<QByteArray> certPem = readCertificateFile(certPath);
    if (!certPem)
        return certPem.error();
    QList<QSslCertificate> chain = QSslCertificate::fromData(*certPem, QSsl::Pem);
    openssl::Bio certBio = openssl::memoryReader(*certPem);
    openssl::X509Ptr leaf(certBio ? PEM_read_bio_X509(certBio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (chain.isEmpty() || chain.first().isNull() || !leaf) {
        openssl::takeError();
        return makeError(str(certPath) +
                         " is not a PEM certificate (expected \"-----BEGIN CERTIFICATE-----\")");
    }

    Result<QByteArray> keyPem = KeyFile::read(keyPath, KeyFile::Readers::OwnerOrGroup);
    if (!keyPem)
        return keyPem.error();
    openssl::Pkey key = openssl::readPrivateKeyPem(*keyPem);
    openssl::cleanse(*keyPem);
    if (!key) {
        openssl::takeError();
        return makeError(str(keyPath) + " is not an unencrypted PEM private key");
    }
    QSsl::KeyAlgorithm algorithm;
    switch (EVP_PKEY_get_base_id(key.get())) {
    case EVP_PKEY_EC:
        algorithm = QSsl::Ec;
        break;
    case EVP_PKEY_RSA:
        algorithm = QSsl::Rsa;
        break;
    default: {
        const char* type = EVP_PKEY_get0_type_name(key.get());
        return makeError(str(keyPath) + " holds a key of type " + (type ? type : "unknown") +
                         "; the TLS key must be EC or RSA");
    }
    }
    if (X509_check_private_key(leaf.get(), key.get()) != 1) {
        openssl::takeError();
        return makeError("the private key in " + str(keyPath) + " does not match the certificate in " +
                         str(certPath));
    }
    // Qt gets the key re-encoded as PKCS#8, whichever PEM flavour the operator's file uses.
    QByteArray pkcs8 = openssl::privateKeyPem(key.get());
    QSslKey sslKey(pkcs8, algorithm, QSsl::Pem, QSsl::PrivateKey);
    openssl::cleanse(pkcs8);
    if (sslKey.isNull())
        return makeError("Qt's TLS backend cannot use the key in " + str(keyPath));
    return TlsCertificate(std::move(chain), std::move(sslKey));
}

QString TlsCertificate::sha256Fingerprint() const {
    return QString::fromLatin1(certificate().digest(QCryptographicHash::Sha256).toHex(':').toUpper());
}

} // namespace tessera
