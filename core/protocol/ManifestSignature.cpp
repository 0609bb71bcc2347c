// SPDX-License-Identifier: Apache-2.0
#include "protocol/ManifestSignature.h"

#include "common/Identity.h"

namespace tessera::protocol {

QByteArray manifestSigningPayload(const gpu::ShardManifest& manifest) {
    gpu::ShardManifest unsigned_ = manifest;
    unsigned_.signature.reset();
    return QByteArray::fromStdString(unsigned_.toJson());
}

void signManifest(gpu::ShardManifest& manifest, const Identity& coordinatorKey) {
    manifest.signature =
        Identity::toBase64Url(coordinatorKey.sign(manifestSigningPayload(manifest))).toStdString();
}

bool manifestSignatureValid(const gpu::ShardManifest& manifest, const QByteArray& publicKey) {
    if (!manifest.signature)
        return false;
    Result<QByteArray> signature =
        Identity::fromBase64Url(QString::fromStdString(*manifest.signature), Identity::kSignatureSize);
    return signature && Identity::verify(publicKey, manifestSigningPayload(manifest), *signature);
}

Result<gpu::ShardManifest> parseSignedManifest(const QByteArray& json, const QByteArray& coordinatorKey) {
    Result<gpu::ShardManifest> m =
        gpu::ShardManifest::fromJson(std::string_view(json.constData(), std::size_t(json.size())));
    if (!m)
        return m.error();
    if (coordinatorKey.size() != 32)
        return makeError("manifest signature invalid: the pinned coordinator key must be 32 bytes, got " +
                         std::to_string(coordinatorKey.size()));
    if (!m->signature)
        return makeError("manifest signature invalid: the manifest of " + m->file +
                         " is unsigned, so not signed by the pinned coordinator key");
    if (!manifestSignatureValid(*m, coordinatorKey))
        return makeError("manifest signature invalid: not signed by the pinned coordinator key (" + m->file +
                         " stage " + std::to_string(m->stage) + " version " + std::to_string(m->version) +
                         ")");
    return m;
}

} // namespace tessera::protocol
