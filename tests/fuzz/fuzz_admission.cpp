// SPDX-License-Identifier: Apache-2.0
// Admission: a POST /v1/admission or /v1/admission/challenge body as AdmissionApi reads it
// (parseJsonObject, then parseAdmissionRequest, or the challenge's node_key), the id segments of
// the API's paths, and the client version a node announces. Claims that parse are in range, and
// their signature is checked without crashing whatever the key.
#include "FuzzCheck.h"
#include "common/Identity.h"
#include "coordinator/api/JsonBody.h"
#include "protocol/AdmissionClaims.h"

using namespace tessera;
using namespace tessera::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray body(reinterpret_cast<const char*>(data), qsizetype(size));
    const QString text = QString::fromUtf8(body);

    // Path ids ("/v1/nodes/{id}/...") and versions are short texts from the same peer.
    const qint64 id = coordinator::parseIdSegment(text);
    FUZZ_CHECK(id >= -1 && id <= 999'999'999);
    FUZZ_CHECK(id == -1 || QString::number(id) == text); // one spelling per id
    if (const Result<ClientVersion> version = ClientVersion::parse(text))
        FUZZ_CHECK(version->toString() == text);

    const Result<QJsonObject> object = coordinator::parseJsonObject(body);
    tessera::fuzz::verdict("body", object);
    if (!object) {
        FUZZ_CHECK(object.message().rfind("body: ", 0) == 0);
        return 0;
    }
    // The challenge: a node_key alone.
    if (const QJsonValue key = object->value(u"node_key"); key.isString()) {
        if (const Result<QByteArray> raw =
                Identity::fromBase64Url(key.toString(), Identity::kPublicKeySize)) {
            FUZZ_CHECK(raw->size() == Identity::kPublicKeySize);
            FUZZ_CHECK(Identity::toBase64Url(*raw) == key.toString()); // one spelling per key
        }
    }

    const Result<AdmissionClaims> claims = parseAdmissionRequest(*object);
    tessera::fuzz::verdict("claims", claims);
    if (!claims)
        return 0;
    const AdmissionClaims& c = *claims;
    FUZZ_CHECK(c.publicKey.size() == Identity::kPublicKeySize);
    FUZZ_CHECK(c.signature.size() == Identity::kSignatureSize);
    FUZZ_CHECK(c.memoryBytes >= kMinMemoryBytes && c.memoryBytes <= kMaxMemoryBytes);
    FUZZ_CHECK(c.gflops >= kMinGflops && c.gflops <= kMaxGflops);
    FUZZ_CHECK(!c.memoryGbps || (*c.memoryGbps >= kMinMemoryGbps && *c.memoryGbps <= kMaxMemoryGbps));
    FUZZ_CHECK(c.deviceKind == DeviceKind::Cpu ? c.deviceIndex == -1
                                               : c.deviceIndex >= 0 && c.deviceIndex <= kMaxDeviceIndex);
    FUZZ_CHECK(c.hardware.value(u"device").toString() ==
               (c.deviceKind == DeviceKind::Cpu ? QStringLiteral("cpu")
                                                : QStringLiteral("cuda:%1").arg(c.deviceIndex)));
    FUZZ_CHECK(!c.deviceName.trimmed().isEmpty() && c.deviceName.size() <= kMaxDeviceNameLength);
    FUZZ_CHECK(c.clientVersion.toString() == c.clientVersionText);
    FUZZ_CHECK(c.nodeId().size() == 64);
    FUZZ_CHECK(c.signingPayload().startsWith("tessera-admission-v1\n"));
    (void)c.signatureValid(); // any 32 bytes as an Ed25519 key: false, never a crash
    return 0;
}
