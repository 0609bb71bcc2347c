// SPDX-License-Identifier: Apache-2.0
#include "common/OpenSsl.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <limits>

namespace tessera::openssl {

std::string takeError() {
    unsigned long last = 0;
    while (unsigned long e = ERR_get_error())
        last = e;
    if (last == 0)
        return "unknown error";
    char text[256];
    ERR_error_string_n(last, text, sizeof text);
    return text;
}

Bio memoryReader(const QByteArray& data) {
    if (data.size() > std::numeric_limits<int>::max())
        return nullptr;
    return Bio(BIO_new_mem_buf(data.constData(), static_cast<int>(data.size())));
}

Bio memoryWriter(bool secret) {
    return Bio(BIO_new(secret ? BIO_s_secmem() : BIO_s_mem()));
}

QByteArray contents(BIO* bio) {
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    if (size <= 0 || data == nullptr)
        return {};
    return QByteArray(data, static_cast<qsizetype>(size));
}

namespace {

// An encrypted key would otherwise make OpenSSL prompt on the terminal.
int noPassphrase(char*, int, int, void*) {
    return 0;
}

} // namespace

Pkey readPrivateKeyPem(const QByteArray& pem) {
    Bio bio = memoryReader(pem);
    if (!bio)
        return nullptr;
    return Pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, noPassphrase, nullptr));
}

QByteArray privateKeyPem(EVP_PKEY* key) {
    Bio bio = memoryWriter(true);
    if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
        return {};
    return contents(bio.get());
}

void cleanse(QByteArray& secret) {
    if (!secret.isEmpty())
        OPENSSL_cleanse(secret.data(), static_cast<std::size_t>(secret.size()));
    secret.clear();
}

} // namespace tessera::openssl
