// SPDX-License-Identifier: Apache-2.0
#include "node/shard/Sha256Digest.h"

#include "common/OpenSsl.h"

namespace tessera::node {

void Sha256Digest::Free::operator()(evp_md_ctx_st* ctx) const {
    EVP_MD_CTX_free(ctx);
}

Sha256Digest::Sha256Digest()
    : m_ctx(EVP_MD_CTX_new()) {
    reset();
}

Sha256Digest::~Sha256Digest() = default;
Sha256Digest::Sha256Digest(Sha256Digest&&) noexcept = default;
Sha256Digest& Sha256Digest::operator=(Sha256Digest&&) noexcept = default;

void Sha256Digest::reset() {
    m_ok = m_ctx && EVP_DigestInit_ex(m_ctx.get(), EVP_sha256(), nullptr) == 1;
    if (!m_ok)
        (void)openssl::takeError(); // Qt's TLS shares this thread's error queue
}

void Sha256Digest::update(QByteArrayView data) {
    if (m_ok && !data.isEmpty())
        m_ok = EVP_DigestUpdate(m_ctx.get(), data.data(), std::size_t(data.size())) == 1;
}

std::string Sha256Digest::finalHex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    const bool ok = m_ok && EVP_DigestFinal_ex(m_ctx.get(), digest, &length) == 1 && length == 32;
    if (!ok)
        (void)openssl::takeError();
    reset();
    if (!ok)
        return {};
    static const char* const hex = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 0xF];
    }
    return out;
}

} // namespace tessera::node
