// SPDX-License-Identifier: Apache-2.0
#pragma once
// OpenSsl: RAII handles for the OpenSSL objects core/ uses, and error-queue draining (internal to core/).

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <QByteArray>

#include <memory>
#include <string>

namespace tessera::openssl {

template <auto Free>
struct Deleter {
    template <class T>
    void operator()(T* p) const {
        Free(p);
    }
};

using Pkey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX_free>>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, Deleter<EVP_MD_CTX_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using Bignum = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using GeneralNames = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES_free>>;
using GeneralName = std::unique_ptr<GENERAL_NAME, Deleter<GENERAL_NAME_free>>;

// Empties this thread's OpenSSL error queue and returns its last entry ("unknown error" when
// empty). Every failure path calls it: Qt's TLS backend shares the queue and would otherwise
// read our stale errors as its own.
std::string takeError();

// A read-only memory BIO over `data`, which must outlive it.
Bio memoryReader(const QByteArray& data);

// A memory BIO's contents; `secret` BIOs are allocated from OpenSSL's secure heap.
Bio memoryWriter(bool secret = false);
QByteArray contents(BIO* bio);

// Parses one PEM private key, never prompting for a passphrase (an encrypted key fails).
Pkey readPrivateKeyPem(const QByteArray& pem);
// PKCS#8 PEM, unencrypted ("-----BEGIN PRIVATE KEY-----").
QByteArray privateKeyPem(EVP_PKEY* key);

// Overwrites a buffer that held a secret before it is freed.
void cleanse(QByteArray& secret);

} // namespace tessera::openssl
