// SPDX-License-Identifier: Apache-2.0
#pragma once
// AdmissionClaims: a node's signed admission request (POST /v1/admission), parsed and range-checked.

#include "base/Dtype.h"
#include "base/Result.h"
#include "protocol/ClientVersion.h"
#include "protocol/PublicProfile.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include <optional>

namespace tessera {
class Identity;
}

namespace tessera::protocol {

enum class DeviceKind { Cpu, Cuda };

// Claims outside these ranges are lies or typos, refused before any decision is made on them.
inline constexpr qint64 kMinMemoryBytes = qint64(256) << 20; // 256 MiB
inline constexpr qint64 kMaxMemoryBytes = qint64(2) << 40;   // 2 TiB
inline constexpr double kMinGflops = 0.1;
inline constexpr double kMaxGflops = 5e6; // 5 EFLOP/s from one device would be a lie
inline constexpr double kMinMemoryGbps = 0.1;
inline constexpr double kMaxMemoryGbps = 1e5;
inline constexpr int kMaxDeviceIndex = 255;
inline constexpr qsizetype kMaxDeviceNameLength = 256;
// hardware and bench may carry extra members (driver, compute capability...): the signature
// covers them, but they stay small.
inline constexpr qsizetype kMaxClaimObjectMembers = 32;
inline constexpr qsizetype kMaxClaimObjectBytes = 4096;
inline constexpr qsizetype kNonceBytes = 32;

struct AdmissionClaims {
    // As sent: the signature covers these texts and objects, extra members included.
    QString nodeKey; // base64url of the Ed25519 public key
    QString nonce;   // base64url of the challenge's 32 bytes
    QJsonObject hardware;
    QJsonObject bench;
    QString clientVersionText;
    std::optional<QJsonObject> profileJson; // the opt-in "profile" member, when it was sent
    QByteArray signature;                   // 64 bytes, decoded

    // Decoded and checked.
    QByteArray publicKey; // 32 bytes
    ClientVersion clientVersion;
    DeviceKind deviceKind = DeviceKind::Cpu;
    int deviceIndex = -1; // the N of "cuda:N"; -1 for the CPU
    QString deviceName;
    qint64 memoryBytes = 0;
    double gflops = 0; // best GEMM throughput measured
    gpu::Dtype computeDtype = gpu::Dtype::F32;
    std::optional<double> memoryGbps;
    PublicProfile profile; // checked and cleaned; empty: anonymous

    QString nodeId() const; // SHA-256 of publicKey, hex
    QByteArray signingPayload() const;
    bool signatureValid() const;
};

// Every member must be present and in range (but "profile", which is optional), and nothing unknown
// may appear at the top level (it would not be signed). An error names the field: "hardware.memory_bytes:
// must be ...". The signature is decoded here but checked by AdmissionService.
Result<AdmissionClaims> parseAdmissionRequest(const QJsonObject& request);

// What a node signs and the coordinator verifies, UTF-8, fields joined by '\n':
//   "tessera-admission-v1" \n node_key \n nonce \n hardware \n bench \n client_version
// where hardware and bench are QJsonDocument's Compact encoding of the objects: no whitespace,
// keys sorted (QJsonObject keeps them ordered by UTF-16 code unit), numbers as Qt writes them
// (integers in full, others in shortest round-trip form). The coordinator re-encodes the objects
// it parsed, so any client that builds them with Qt signs the same bytes.
// A request with a "profile" (display name, team) signs
//   "tessera-admission-v2" \n node_key \n nonce \n hardware \n bench \n client_version \n profile
// instead, profile encoded like hardware: the name a node is shown by is its own word, and a request
// without one signs what nodes that predate profiles sign.
QByteArray admissionSigningPayload(const QString& nodeKey, const QString& nonce, const QJsonObject& hardware,
                                   const QJsonObject& bench, const QString& clientVersion,
                                   const std::optional<QJsonObject>& profile = std::nullopt);

// The node's side: the request body for POST /v1/admission, signed by identity; the profile is
// sent only when it is not empty.
QJsonObject makeAdmissionRequest(const Identity& identity, const QString& nonce, const QJsonObject& hardware,
                                 const QJsonObject& bench, const QString& clientVersion,
                                 const PublicProfile& profile = {});

} // namespace tessera::protocol
