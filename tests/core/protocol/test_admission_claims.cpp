// SPDX-License-Identifier: Apache-2.0
// Admission claims: a node's signed request parses only when every field is in range, an error
// names the field, and the signed bytes are canonical whatever the JSON's spacing or key order.
#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"

#include <QJsonDocument>
#include <QTest>

using namespace tessera;

namespace {

template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

QJsonObject hardware() {
    return QJsonObject{{QStringLiteral("device"), QStringLiteral("cuda:0")},
                       {QStringLiteral("name"), QStringLiteral("NVIDIA GeForce RTX 4070")},
                       {QStringLiteral("memory_bytes"), qint64(12) << 30},
                       {QStringLiteral("compute_capability"), QStringLiteral("8.9")}};
}

QJsonObject bench() {
    return QJsonObject{{QStringLiteral("gflops"), 61234.5},
                       {QStringLiteral("dtype"), QStringLiteral("bf16")},
                       {QStringLiteral("memory_gbps"), 480.0}};
}

const QString kNonce = Identity::toBase64Url(QByteArray(32, 'n'));

// Sets a dotted path ("hardware.memory_bytes") in request; an undefined value removes it.
void setPath(QJsonObject& request, const QString& path, const QJsonValue& value) {
    const QStringList parts = path.split(u'.');
    if (parts.size() == 1) {
        if (value.isUndefined())
            request.remove(path);
        else
            request.insert(path, value);
        return;
    }
    QJsonObject inner = request.value(parts[0]).toObject();
    if (value.isUndefined())
        inner.remove(parts[1]);
    else
        inner.insert(parts[1], value);
    request.insert(parts[0], inner);
}

} // namespace

class TestAdmissionClaims final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void validRequestParsesAndVerifies();
    void optionalMemoryBandwidthMayBeAbsent();
    void badFieldIsNamed_data();
    void badFieldIsNamed();
    void signingPayloadIsCanonical();
    void signatureSurvivesReformatting();

private:
    std::optional<Identity> m_identity;
};

void TestAdmissionClaims::initTestCase() {
    Result<Identity> id = Identity::generate();
    QVERIFY2(id, failure(id));
    m_identity = *id;
}

void TestAdmissionClaims::validRequestParsesAndVerifies() {
    const QJsonObject request =
        protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"));
    Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(request);
    QVERIFY2(c, failure(c));
    QCOMPARE(c->publicKey, m_identity->publicKey());
    QCOMPARE(c->nodeId(), m_identity->nodeId());
    QCOMPARE(c->nonce, kNonce);
    QCOMPARE(c->deviceKind, protocol::DeviceKind::Cuda);
    QCOMPARE(c->deviceIndex, 0);
    QCOMPARE(c->deviceName, QStringLiteral("NVIDIA GeForce RTX 4070"));
    QCOMPARE(c->memoryBytes, qint64(12) << 30);
    QCOMPARE(c->gflops, 61234.5);
    QCOMPARE(c->computeDtype, gpu::Dtype::BF16);
    QCOMPARE(c->memoryGbps, std::optional<double>(480.0));
    QCOMPARE(c->clientVersion, (protocol::ClientVersion{0, 2, 0}));
    QVERIFY(c->signatureValid());
}

void TestAdmissionClaims::optionalMemoryBandwidthMayBeAbsent() {
    QJsonObject b = bench();
    b.remove(QStringLiteral("memory_gbps"));
    QJsonObject hw = hardware();
    hw.insert(QStringLiteral("device"), QStringLiteral("cpu"));
    Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(
        protocol::makeAdmissionRequest(*m_identity, kNonce, hw, b, QStringLiteral("1.22.333")));
    QVERIFY2(c, failure(c));
    QVERIFY(!c->memoryGbps);
    QCOMPARE(c->deviceKind, protocol::DeviceKind::Cpu);
    QCOMPARE(c->deviceIndex, -1);
}

void TestAdmissionClaims::badFieldIsNamed_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QJsonValue>("value");
    QTest::addColumn<QString>("expected"); // the error's start

    const QJsonValue missing(QJsonValue::Undefined);
    QTest::newRow("node_key missing") << u"node_key"_qs << missing << u"node_key: missing"_qs;
    QTest::newRow("node_key short") << u"node_key"_qs << QJsonValue(u"AAAA"_qs)
                                    << u"node_key: must be base64url (unpadded) of 32 bytes"_qs;
    QTest::newRow("nonce not a string") << u"nonce"_qs << QJsonValue(12) << u"nonce: must be a string"_qs;
    QTest::newRow("nonce padded") << u"nonce"_qs << QJsonValue(kNonce + u"="_qs)
                                  << u"nonce: must be base64url"_qs;
    QTest::newRow("hardware not an object")
        << u"hardware"_qs << QJsonValue(u"gpu"_qs) << u"hardware: must be an object"_qs;
    QTest::newRow("device unknown") << u"hardware.device"_qs << QJsonValue(u"tpu"_qs)
                                    << u"hardware.device: "_qs;
    QTest::newRow("device index too high")
        << u"hardware.device"_qs << QJsonValue(u"cuda:256"_qs) << u"hardware.device: "_qs;
    QTest::newRow("device index leading zero")
        << u"hardware.device"_qs << QJsonValue(u"cuda:01"_qs) << u"hardware.device: "_qs;
    QTest::newRow("name empty") << u"hardware.name"_qs << QJsonValue(u" "_qs) << u"hardware.name: "_qs;
    QTest::newRow("name too long") << u"hardware.name"_qs << QJsonValue(QString(300, u'x'))
                                   << u"hardware.name: "_qs;
    QTest::newRow("memory missing") << u"hardware.memory_bytes"_qs << missing
                                    << u"hardware.memory_bytes: missing"_qs;
    QTest::newRow("memory too small") << u"hardware.memory_bytes"_qs << QJsonValue(1024)
                                      << u"hardware.memory_bytes: must be between 256 MiB and 2 TiB"_qs;
    QTest::newRow("memory too large") << u"hardware.memory_bytes"_qs << QJsonValue(qint64(3) << 40)
                                      << u"hardware.memory_bytes: must be between 256 MiB and 2 TiB"_qs;
    QTest::newRow("memory fractional") << u"hardware.memory_bytes"_qs << QJsonValue(1e9 + 0.5)
                                       << u"hardware.memory_bytes: must be a whole number"_qs;
    QTest::newRow("memory as text") << u"hardware.memory_bytes"_qs << QJsonValue(u"12G"_qs)
                                    << u"hardware.memory_bytes: must be a number"_qs;
    QTest::newRow("gflops missing") << u"bench.gflops"_qs << missing << u"bench.gflops: missing"_qs;
    QTest::newRow("gflops too low") << u"bench.gflops"_qs << QJsonValue(0.01)
                                    << u"bench.gflops: must be between 0.1 and 5000000"_qs;
    QTest::newRow("gflops a lie") << u"bench.gflops"_qs << QJsonValue(5e9)
                                  << u"bench.gflops: must be between"_qs;
    QTest::newRow("dtype int8") << u"bench.dtype"_qs << QJsonValue(u"int8"_qs) << u"bench.dtype: "_qs;
    QTest::newRow("memory_gbps a lie")
        << u"bench.memory_gbps"_qs << QJsonValue(1e7) << u"bench.memory_gbps: must be between"_qs;
    QTest::newRow("version two parts")
        << u"client_version"_qs << QJsonValue(u"1.0"_qs) << u"client_version: must be MAJOR.MINOR.PATCH"_qs;
    QTest::newRow("version leading zero")
        << u"client_version"_qs << QJsonValue(u"01.0.0"_qs) << u"client_version: "_qs;
    QTest::newRow("signature short") << u"signature"_qs << QJsonValue(u"AAAA"_qs)
                                     << u"signature: must be base64url (unpadded) of 64 bytes"_qs;
    QTest::newRow("unknown field") << u"admin"_qs << QJsonValue(true) << u"admin: unknown field"_qs;
    QTest::newRow("hardware too long") << u"hardware.drivers"_qs << QJsonValue(QString(5000, u'd'))
                                       << u"hardware: must be at most 4096 bytes"_qs;
}

void TestAdmissionClaims::badFieldIsNamed() {
    QFETCH(QString, path);
    QFETCH(QJsonValue, value);
    QFETCH(QString, expected);
    QJsonObject request =
        protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"));
    setPath(request, path, value);
    Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(request);
    QVERIFY(!c);
    QVERIFY2(QString::fromStdString(c.message()).startsWith(expected), c.message().c_str());
}

void TestAdmissionClaims::signingPayloadIsCanonical() {
    // Keys sorted, no spaces, integers in full: the format other clients must reproduce.
    const QJsonObject hw{{QStringLiteral("name"), QStringLiteral("CPU")},
                         {QStringLiteral("device"), QStringLiteral("cpu")},
                         {QStringLiteral("memory_bytes"), qint64(1) << 33}};
    const QJsonObject b{{QStringLiteral("gflops"), 123.25},
                        {QStringLiteral("dtype"), QStringLiteral("fp32")}};
    const QByteArray payload = protocol::admissionSigningPayload(u"KEY"_qs, u"NONCE"_qs, hw, b, u"0.2.0"_qs);
    QCOMPARE(payload, QByteArray("tessera-admission-v1\nKEY\nNONCE\n"
                                 "{\"device\":\"cpu\",\"memory_bytes\":8589934592,\"name\":\"CPU\"}\n"
                                 "{\"dtype\":\"fp32\",\"gflops\":123.25}\n0.2.0"));
}

void TestAdmissionClaims::signatureSurvivesReformatting() {
    const QJsonObject request =
        protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"));
    // What travels is text: indented, its keys in another order, numbers written differently.
    QByteArray text = QJsonDocument(request).toJson(QJsonDocument::Indented);
    text.replace("61234.5", "6.12345e4");
    const QJsonObject received = QJsonDocument::fromJson(text).object();
    Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(received);
    QVERIFY2(c, failure(c));
    QVERIFY(c->signatureValid());

    QJsonObject tampered = request;
    setPath(tampered, u"hardware.memory_bytes"_qs, QJsonValue(qint64(24) << 30));
    Result<protocol::AdmissionClaims> t = protocol::parseAdmissionRequest(tampered);
    QVERIFY2(t, failure(t));
    QVERIFY(!t->signatureValid());
}

QTEST_GUILESS_MAIN(TestAdmissionClaims)
#include "test_admission_claims.moc"
