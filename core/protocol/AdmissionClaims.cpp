// SPDX-License-Identifier: Apache-2.0
#include "protocol/AdmissionClaims.h"

#include "common/Identity.h"

#include <QJsonDocument>
#include <QRegularExpression>

#include <cmath>

namespace tessera::protocol {

namespace {

const QLatin1StringView kSigningTag("tessera-admission-v1");
const QLatin1StringView kSigningTagWithProfile("tessera-admission-v2");

Error fieldError(const char* field, const std::string& problem) {
    return makeError(std::string(field) + ": " + problem);
}

std::string number(double value) {
    return QString::number(value, 'g', 12).toStdString();
}

Result<QString> requireString(const QJsonObject& obj, const char* field, const QString& key) {
    const QJsonValue v = obj.value(key);
    if (v.isUndefined() || v.isNull())
        return fieldError(field, "missing");
    if (!v.isString())
        return fieldError(field, "must be a string");
    return v.toString();
}

Result<QJsonObject> requireObject(const QJsonObject& obj, const char* field, const QString& key) {
    const QJsonValue v = obj.value(key);
    if (v.isUndefined() || v.isNull())
        return fieldError(field, "missing");
    if (!v.isObject())
        return fieldError(field, "must be an object");
    const QJsonObject o = v.toObject();
    if (o.size() > kMaxClaimObjectMembers)
        return fieldError(field, "must have at most " + std::to_string(kMaxClaimObjectMembers) + " members");
    if (QJsonDocument(o).toJson(QJsonDocument::Compact).size() > kMaxClaimObjectBytes)
        return fieldError(field,
                          "must be at most " + std::to_string(kMaxClaimObjectBytes) + " bytes of JSON");
    return o;
}

// A JSON number in [min, max]; optional ones may be missing or null. range: the bounds in words,
// when plain numbers would not read well.
Result<std::optional<double>> numberIn(const QJsonObject& obj, const char* field, const QString& key,
                                       double min, double max, bool required, const std::string& range = {}) {
    const QJsonValue v = obj.value(key);
    if (v.isUndefined() || v.isNull()) {
        if (required)
            return fieldError(field, "missing");
        return std::optional<double>();
    }
    if (!v.isDouble())
        return fieldError(field, "must be a number");
    const double d = v.toDouble();
    if (!(d >= min && d <= max))
        return fieldError(field, "must be between " +
                                     (range.empty() ? number(min) + " and " + number(max) : range) +
                                     " (got " + number(d) + ")");
    return std::optional<double>(d);
}

Result<QByteArray> base64Field(const QJsonObject& obj, const char* field, const QString& key, qsizetype size,
                               QString* text) {
    Result<QString> s = requireString(obj, field, key);
    if (!s)
        return s.error();
    Result<QByteArray> bytes = Identity::fromBase64Url(*s, size);
    if (!bytes)
        return fieldError(field, "must be base64url (unpadded) of " + std::to_string(size) + " bytes");
    *text = *s;
    return bytes;
}

Status parseHardware(AdmissionClaims& c) {
    Result<QString> device = requireString(c.hardware, "hardware.device", QStringLiteral("device"));
    if (!device)
        return device.error();
    // anchoredPattern, not ^...$: "$" also matches before a final newline ("cuda:0\n").
    static const QRegularExpression cuda(
        QRegularExpression::anchoredPattern(QStringLiteral("cuda:(0|[1-9][0-9]{0,2})")));
    const QRegularExpressionMatch m = cuda.match(*device);
    if (*device == u"cpu") {
        c.deviceKind = DeviceKind::Cpu;
        c.deviceIndex = -1;
    } else if (m.hasMatch() && m.captured(1).toInt() <= kMaxDeviceIndex) {
        c.deviceKind = DeviceKind::Cuda;
        c.deviceIndex = m.captured(1).toInt();
    } else {
        return fieldError("hardware.device", "must be \"cpu\" or \"cuda:N\" (N from 0 to " +
                                                 std::to_string(kMaxDeviceIndex) + ")");
    }

    Result<QString> name = requireString(c.hardware, "hardware.name", QStringLiteral("name"));
    if (!name)
        return name.error();
    if (name->trimmed().isEmpty() || name->size() > kMaxDeviceNameLength)
        return fieldError("hardware.name",
                          "must be between 1 and " + std::to_string(kMaxDeviceNameLength) + " characters");
    c.deviceName = *name;

    Result<std::optional<double>> memory =
        numberIn(c.hardware, "hardware.memory_bytes", QStringLiteral("memory_bytes"), double(kMinMemoryBytes),
                 double(kMaxMemoryBytes), true, "256 MiB and 2 TiB");
    if (!memory)
        return memory.error();
    if (std::floor(**memory) != **memory)
        return fieldError("hardware.memory_bytes", "must be a whole number of bytes");
    c.memoryBytes = static_cast<qint64>(**memory);
    return {};
}

Status parseBench(AdmissionClaims& c) {
    Result<std::optional<double>> gflops =
        numberIn(c.bench, "bench.gflops", QStringLiteral("gflops"), kMinGflops, kMaxGflops, true);
    if (!gflops)
        return gflops.error();
    c.gflops = **gflops;

    Result<QString> dtype = requireString(c.bench, "bench.dtype", QStringLiteral("dtype"));
    if (!dtype)
        return dtype.error();
    const std::optional<gpu::Dtype> d = gpu::parseDtype(dtype->toStdString());
    if (!d || *d == gpu::Dtype::I8)
        return fieldError("bench.dtype", "must be \"fp32\", \"bf16\" or \"fp16\"");
    c.computeDtype = *d;

    Result<std::optional<double>> gbps = numberIn(c.bench, "bench.memory_gbps", QStringLiteral("memory_gbps"),
                                                  kMinMemoryGbps, kMaxMemoryGbps, false);
    if (!gbps)
        return gbps.error();
    c.memoryGbps = *gbps;
    return {};
}

} // namespace

QString AdmissionClaims::nodeId() const {
    return Identity::nodeIdOf(publicKey);
}

QByteArray AdmissionClaims::signingPayload() const {
    return admissionSigningPayload(nodeKey, nonce, hardware, bench, clientVersionText, profileJson);
}

bool AdmissionClaims::signatureValid() const {
    return Identity::verify(publicKey, signingPayload(), signature);
}

Result<AdmissionClaims> parseAdmissionRequest(const QJsonObject& request) {
    static const QStringList known{QStringLiteral("node_key"),       QStringLiteral("nonce"),
                                   QStringLiteral("hardware"),       QStringLiteral("bench"),
                                   QStringLiteral("client_version"), QStringLiteral("signature"),
                                   QStringLiteral("profile")};
    for (auto it = request.begin(); it != request.end(); ++it) {
        if (!known.contains(it.key()))
            return makeError(it.key().left(64).toStdString() + ": unknown field (it would not be signed)");
    }

    AdmissionClaims c;
    Result<QByteArray> key =
        base64Field(request, "node_key", QStringLiteral("node_key"), Identity::kPublicKeySize, &c.nodeKey);
    if (!key)
        return key.error();
    c.publicKey = *key;
    QString ignored;
    if (Result<QByteArray> nonce =
            base64Field(request, "nonce", QStringLiteral("nonce"), kNonceBytes, &c.nonce);
        !nonce)
        return nonce.error();

    Result<QJsonObject> hardware = requireObject(request, "hardware", QStringLiteral("hardware"));
    if (!hardware)
        return hardware.error();
    c.hardware = *hardware;
    if (Status s = parseHardware(c); !s)
        return s.error();

    Result<QJsonObject> bench = requireObject(request, "bench", QStringLiteral("bench"));
    if (!bench)
        return bench.error();
    c.bench = *bench;
    if (Status s = parseBench(c); !s)
        return s.error();

    Result<QString> version = requireString(request, "client_version", QStringLiteral("client_version"));
    if (!version)
        return version.error();
    Result<ClientVersion> parsed = ClientVersion::parse(*version);
    if (!parsed)
        return fieldError("client_version", parsed.message());
    c.clientVersionText = *version;
    c.clientVersion = *parsed;

    if (const QJsonValue profile = request.value(u"profile"); !profile.isUndefined()) {
        Result<PublicProfile> parsedProfile = parsePublicProfile(profile);
        if (!parsedProfile)
            return parsedProfile.error();
        c.profileJson = profile.toObject();
        c.profile = *parsedProfile;
    }

    Result<QByteArray> signature =
        base64Field(request, "signature", QStringLiteral("signature"), Identity::kSignatureSize, &ignored);
    if (!signature)
        return signature.error();
    c.signature = *signature;
    return c;
}

QByteArray admissionSigningPayload(const QString& nodeKey, const QString& nonce, const QJsonObject& hardware,
                                   const QJsonObject& bench, const QString& clientVersion,
                                   const std::optional<QJsonObject>& profile) {
    const QLatin1StringView tag = profile ? kSigningTagWithProfile : kSigningTag;
    QByteArray payload = QByteArray(tag.data(), tag.size());
    for (const QByteArray& part :
         {nodeKey.toUtf8(), nonce.toUtf8(), QJsonDocument(hardware).toJson(QJsonDocument::Compact),
          QJsonDocument(bench).toJson(QJsonDocument::Compact), clientVersion.toUtf8()}) {
        payload += '\n';
        payload += part;
    }
    if (profile) {
        payload += '\n';
        payload += QJsonDocument(*profile).toJson(QJsonDocument::Compact);
    }
    return payload;
}

QJsonObject makeAdmissionRequest(const Identity& identity, const QString& nonce, const QJsonObject& hardware,
                                 const QJsonObject& bench, const QString& clientVersion,
                                 const PublicProfile& profile) {
    const QString key = identity.publicKeyBase64();
    const std::optional<QJsonObject> profileJson =
        profile.isEmpty() ? std::nullopt : std::optional<QJsonObject>(profile.toJson());
    const QByteArray signature =
        identity.sign(admissionSigningPayload(key, nonce, hardware, bench, clientVersion, profileJson));
    QJsonObject request{{QStringLiteral("node_key"), key},
                        {QStringLiteral("nonce"), nonce},
                        {QStringLiteral("hardware"), hardware},
                        {QStringLiteral("bench"), bench},
                        {QStringLiteral("client_version"), clientVersion},
                        {QStringLiteral("signature"), Identity::toBase64Url(signature)}};
    if (profileJson)
        request.insert(QStringLiteral("profile"), *profileJson);
    return request;
}

} // namespace tessera::protocol
