#include "coordinator/api/ManifestSignature.h"

#include "common/Identity.h"

namespace tessera::coordinator {

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

} // namespace tessera::coordinator
