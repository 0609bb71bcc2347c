// SPDX-License-Identifier: Apache-2.0
// ShardManifest and ManifestSignature: a stage shard's manifest as a node receives it (in the
// admission reply and GET /v1/shards/...), parsed strictly and checked against a pinned coordinator
// key. A manifest that parses is valid, survives toJson unchanged, and once signed verifies.
#include "FuzzCheck.h"
#include "common/Identity.h"
#include "protocol/ManifestSignature.h"

using namespace tessera;
using tessera::gpu::ShardManifest;

namespace {

const Identity& coordinatorKey() {
    static const Identity key = *Identity::generate();
    return key;
}

bool same(const ShardManifest& a, const ShardManifest& b) {
    return a.modelConfigHash == b.modelConfigHash && a.stage == b.stage && a.version == b.version &&
           a.step == b.step && a.file == b.file && a.fileSize == b.fileSize && a.sha256 == b.sha256 &&
           a.chunkSize == b.chunkSize && a.chunks == b.chunks && a.signature == b.signature;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray json(reinterpret_cast<const char*>(data), qsizetype(size));
    const QByteArray key = coordinatorKey().publicKey();
    // As the node reads it: a signature by someone else (or none) is refused, never a crash.
    (void)protocol::parseSignedManifest(json, key);
    (void)protocol::parseSignedManifest(json, key.left(31));

    Result<ShardManifest> parsed = ShardManifest::fromJson(std::string_view(json.constData(), size));
    tessera::fuzz::verdict("manifest", parsed);
    if (!parsed)
        return 0;
    ShardManifest& m = *parsed;
    FUZZ_CHECK(m.validate());
    FUZZ_CHECK(m.file.find('/') == std::string::npos && m.file.find("..") != 0);
    const std::string text = m.toJson();
    const Result<ShardManifest> again = ShardManifest::fromJson(text);
    FUZZ_CHECK(again);
    FUZZ_CHECK(same(m, *again));
    FUZZ_CHECK(again->toJson() == text);

    // Signed by the pinned key, it verifies; the bytes signed never hold the signature.
    protocol::signManifest(m, coordinatorKey());
    FUZZ_CHECK(protocol::manifestSignatureValid(m, key));
    FUZZ_CHECK(protocol::manifestSigningPayload(m).indexOf("\"signature\"") < 0);
    const Result<ShardManifest> signedOne =
        protocol::parseSignedManifest(QByteArray::fromStdString(m.toJson()), key);
    FUZZ_CHECK(signedOne);
    FUZZ_CHECK(same(m, *signedOne));
    return 0;
}
