// SPDX-License-Identifier: Apache-2.0
#pragma once
// ManifestSignature: the coordinator's Ed25519 signature on a stage shard manifest.
//
// manifest.signature = base64url (unpadded) of the Ed25519 signature, by the coordinator key
// that /v1/info publishes, over the UTF-8 bytes of ShardManifest::toJson() of the same manifest
// with no signature field. toJson() has one fixed key order and number spelling, so a client
// that reparses a manifest (ShardManifest::fromJson, whatever the key order it arrived in),
// clears the signature and calls toJson() again verifies the very bytes that were signed.

#include "base/Result.h"
#include "base/ShardManifest.h"

#include <QByteArray>

namespace tessera {
class Identity;
}

namespace tessera::protocol {

// The bytes signed: the manifest's JSON without its signature.
QByteArray manifestSigningPayload(const gpu::ShardManifest& manifest);
// Sets manifest.signature.
void signManifest(gpu::ShardManifest& manifest, const Identity& coordinatorKey);
// False when unsigned, badly encoded or not signed by publicKey (32 raw bytes).
bool manifestSignatureValid(const gpu::ShardManifest& manifest, const QByteArray& publicKey);
// A manifest as a node receives it: parsed strictly, and signed by the pinned coordinator key
// (32 raw bytes); the error says which of the two failed.
Result<gpu::ShardManifest> parseSignedManifest(const QByteArray& json, const QByteArray& coordinatorKey);

} // namespace tessera::protocol
