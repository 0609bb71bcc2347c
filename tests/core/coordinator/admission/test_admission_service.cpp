// SPDX-License-Identifier: Apache-2.0
// AdmissionService on a real SQLite file, with real Ed25519 identities: a signed, fresh request
// is admitted to a stage and gets a session whose token the database never holds; a replay, a
// stale nonce, a wrong signature or tampered claims are refused; too old a client or too little
// memory is denied in words; a full swarm waitlists.
#include "common/Identity.h"
#include "coordinator/admission/AdmissionService.h"
#include "coordinator/store/AssignmentLog.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/SessionStore.h"

#include <QFile>
#include <QJsonDocument>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

constexpr qint64 kNow = 1'700'000'000'000;

QJsonObject gpuHardware(qint64 gib) {
    return QJsonObject{{QStringLiteral("device"), QStringLiteral("cuda:0")},
                       {QStringLiteral("name"), QStringLiteral("Test GPU")},
                       {QStringLiteral("memory_bytes"), gib << 30}};
}

QJsonObject bench(double gflops = 40000) {
    return QJsonObject{{QStringLiteral("gflops"), gflops}, {QStringLiteral("dtype"), QStringLiteral("bf16")}};
}

gpu::ModelConfig preset(const char* name) {
    Result<gpu::ModelConfig> c = gpu::ModelConfig::preset(name);
    if (!c)
        qFatal("%s", c.message().c_str());
    return *c;
}

} // namespace

class TestAdmissionService final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();

    void admittedWithHashedSessionToken();
    void replayedNonceIsUnauthorized();
    void expiredNonceIsUnauthorized();
    void anotherKeysSignatureIsUnauthorized();
    void tamperedHardwareIsUnauthorized();
    void oldClientIsDenied();
    void nodeThatFitsNoStageIsDeniedInWords();
    void nodesSpreadOverStagesByLoad();
    void fullSwarmWaitlists();
    void challengeNeedsAKey();
    void failingNonceTableIsAnErrorNot401();
    void madeUpOrForeignNoncesCostNoWrite();
    void noncesOutliveTheServiceWithTheSameSecret();

private:
    Identity newIdentity();
    // Challenge, sign and parse, as a node and the HTTP layer would.
    protocol::AdmissionClaims request(AdmissionService& service, const Identity& id,
                                      const QJsonObject& hardware,
                                      const QString& version = QStringLiteral("0.2.0"));

    QTemporaryDir m_dir;
    std::unique_ptr<Database> m_db;
    int m_files = 0;
};

void TestAdmissionService::initTestCase() {
    QVERIFY(m_dir.isValid());
}

void TestAdmissionService::init() {
    Result<std::unique_ptr<Database>> db = Database::open(
        QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("db%1.sqlite").arg(++m_files)),
        m_dir.path());
    QVERIFY2(db, failure(db));
    Result<int> migrated = (*db)->migrate();
    QVERIFY2(migrated, failure(migrated));
    m_db = std::move(*db);
}

void TestAdmissionService::cleanup() {
    m_db.reset();
}

Identity TestAdmissionService::newIdentity() {
    Result<Identity> id = Identity::generate();
    if (!id)
        qFatal("%s", id.message().c_str());
    return *id;
}

protocol::AdmissionClaims TestAdmissionService::request(AdmissionService& service, const Identity& id,
                                                        const QJsonObject& hardware, const QString& version) {
    Result<QString> nonce = service.challenge(id.publicKeyBase64(), kNow);
    if (!nonce)
        qFatal("%s", nonce.message().c_str());
    Result<protocol::AdmissionClaims> claims = protocol::parseAdmissionRequest(
        protocol::makeAdmissionRequest(id, *nonce, hardware, bench(), version));
    if (!claims)
        qFatal("%s", claims.message().c_str());
    return *claims;
}

void TestAdmissionService::admittedWithHashedSessionToken() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    const Identity id = newIdentity();
    Result<AdmissionOutcome> out = service.admit(request(service, id, gpuHardware(24)), kNow + 1000);
    QVERIFY2(out, failure(out));
    QCOMPARE(httpStatusOf(*out), 200);
    const Admitted& a = std::get<Admitted>(*out);
    QCOMPARE(a.nodeId, id.nodeId());
    QCOMPARE(a.stage, 0);
    QVERIFY(Identity::fromBase64Url(a.sessionToken, 32));

    // The session is found by the token's hash; the token itself is nowhere in the database.
    SessionStore sessions(*m_db);
    Result<std::optional<SessionRecord>> s =
        sessions.findValid(AdmissionService::sessionTokenHash(a.sessionToken), kNow + 2000);
    QVERIFY2(s, failure(s));
    QVERIFY(s->has_value());
    QCOMPARE((*s)->nodeId, id.nodeId());
    QVERIFY(!sessions.findValid(a.sessionToken, kNow + 2000)->has_value());
    const QString path = m_dir.filePath(QStringLiteral("db%1.sqlite").arg(m_files));
    for (const QString& file : {path, QString(path + u"-wal"_qs)}) {
        QFile f(file);
        if (f.open(QIODevice::ReadOnly))
            QVERIFY2(!f.readAll().contains(a.sessionToken.toLatin1()), qPrintable(file));
    }

    Result<std::optional<NodeRecord>> node = NodeRegistry(*m_db).find(id.nodeId());
    QVERIFY2(node, failure(node));
    QVERIFY(node->has_value());
    QCOMPARE((*node)->state, NodeState::Online);
    QCOMPARE((*node)->stage, std::optional<int>(0));
    QCOMPARE((*node)->publicKey, id.publicKeyBase64());
    QCOMPARE(QJsonDocument::fromJson((*node)->hardwareJson.toUtf8()).object(), gpuHardware(24));
    Result<std::optional<AssignmentRecord>> assigned = AssignmentLog(*m_db).current(id.nodeId());
    QVERIFY2(assigned, failure(assigned));
    QVERIFY(assigned->has_value());
    QCOMPARE((*assigned)->stage, 0);
    QCOMPARE((*assigned)->assignedAtMs, kNow + 1000);

    // Admitted again (a restart): the old session is revoked, the stage log moves on.
    Result<AdmissionOutcome> again = service.admit(request(service, id, gpuHardware(24)), kNow + 5000);
    QVERIFY2(again, failure(again));
    QVERIFY(std::holds_alternative<Admitted>(*again));
    QVERIFY(
        !sessions.findValid(AdmissionService::sessionTokenHash(a.sessionToken), kNow + 6000)->has_value());
    QVERIFY((*AssignmentLog(*m_db).current(id.nodeId()))->id > (*assigned)->id);
}

void TestAdmissionService::replayedNonceIsUnauthorized() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    const protocol::AdmissionClaims claims = request(service, newIdentity(), gpuHardware(24));
    Result<AdmissionOutcome> first = service.admit(claims, kNow + 1);
    QVERIFY2(first, failure(first));
    QVERIFY(std::holds_alternative<Admitted>(*first));
    Result<AdmissionOutcome> replay = service.admit(claims, kNow + 2);
    QVERIFY2(replay, failure(replay));
    QCOMPARE(httpStatusOf(*replay), 401);
    QVERIFY2(std::get<Unauthorized>(*replay).reason.find("already used") != std::string::npos,
             std::get<Unauthorized>(*replay).reason.c_str());
}

void TestAdmissionService::expiredNonceIsUnauthorized() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    const protocol::AdmissionClaims claims = request(service, newIdentity(), gpuHardware(24));
    Result<AdmissionOutcome> late = service.admit(claims, kNow + 120'000); // TTL 120 s
    QVERIFY2(late, failure(late));
    QVERIFY(std::holds_alternative<Unauthorized>(*late));
    QVERIFY2(std::get<Unauthorized>(*late).reason.find("expired") != std::string::npos,
             std::get<Unauthorized>(*late).reason.c_str());
}

void TestAdmissionService::anotherKeysSignatureIsUnauthorized() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    const Identity victim = newIdentity();
    const Identity forger = newIdentity();
    protocol::AdmissionClaims claims = request(service, victim, gpuHardware(24));
    claims.signature = forger.sign(claims.signingPayload());
    Result<AdmissionOutcome> out = service.admit(claims, kNow + 1);
    QVERIFY2(out, failure(out));
    QVERIFY(std::holds_alternative<Unauthorized>(*out));
    QVERIFY(std::get<Unauthorized>(*out).reason.starts_with("signature:"));
    QVERIFY(!NodeRegistry(*m_db).find(victim.nodeId())->has_value());

    // The forgery did not spend the victim's nonce: its own request still gets in.
    claims.signature = victim.sign(claims.signingPayload());
    Result<AdmissionOutcome> genuine = service.admit(claims, kNow + 2);
    QVERIFY2(genuine, failure(genuine));
    QVERIFY(std::holds_alternative<Admitted>(*genuine));
}

void TestAdmissionService::tamperedHardwareIsUnauthorized() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    const Identity id = newIdentity();
    Result<QString> nonce = service.challenge(id.publicKeyBase64(), kNow);
    QVERIFY2(nonce, failure(nonce));
    QJsonObject body =
        protocol::makeAdmissionRequest(id, *nonce, gpuHardware(8), bench(), QStringLiteral("0.2.0"));
    body.insert(QStringLiteral("hardware"), gpuHardware(80)); // claimed more memory after signing
    Result<protocol::AdmissionClaims> claims = protocol::parseAdmissionRequest(body);
    QVERIFY2(claims, failure(claims));
    Result<AdmissionOutcome> out = service.admit(*claims, kNow + 1);
    QVERIFY2(out, failure(out));
    QCOMPARE(httpStatusOf(*out), 401);
}

void TestAdmissionService::oldClientIsDenied() {
    AdmissionSettings settings;
    settings.minimumClientVersion = protocol::ClientVersion{0, 2, 0};
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}), settings);
    Result<AdmissionOutcome> out =
        service.admit(request(service, newIdentity(), gpuHardware(24), QStringLiteral("0.1.9")), kNow + 1);
    QVERIFY2(out, failure(out));
    QCOMPARE(httpStatusOf(*out), 403);
    const std::string& reason = std::get<Denied>(*out).reason;
    QVERIFY2(reason.find("0.1.9") != std::string::npos && reason.find("0.2.0") != std::string::npos,
             reason.c_str());

    Result<AdmissionOutcome> current =
        service.admit(request(service, newIdentity(), gpuHardware(24), QStringLiteral("0.10.0")), kNow + 1);
    QVERIFY2(current, failure(current));
    QVERIFY(std::holds_alternative<Admitted>(*current)); // 10 > 2: numbers, not text
}

void TestAdmissionService::nodeThatFitsNoStageIsDeniedInWords() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("8b"), {}));
    const Identity id = newIdentity();
    Result<AdmissionOutcome> out = service.admit(request(service, id, gpuHardware(12)), kNow + 1);
    QVERIFY2(out, failure(out));
    QCOMPARE(httpStatusOf(*out), 403);
    const QString reason = QString::fromStdString(std::get<Denied>(*out).reason);
    QVERIFY2(reason.contains(u"needs ") && reason.contains(u" GiB") &&
                 reason.contains(u"this GPU has 12.0 GiB"),
             qPrintable(reason));
    QVERIFY(!NodeRegistry(*m_db).find(id.nodeId())->has_value());
}

void TestAdmissionService::nodesSpreadOverStagesByLoad() {
    const gpu::ModelConfig config = preset("small");
    AdmissionService service(*m_db, AssignmentPolicy(config, {}));
    // Equal nodes: each empty stage in turn, then the stage with the most parameters per
    // gflops already serving it.
    QList<int> stages;
    for (int i = 0; i < 5; ++i) {
        Result<AdmissionOutcome> out =
            service.admit(request(service, newIdentity(), gpuHardware(24)), kNow + i);
        QVERIFY2(out, failure(out));
        QVERIFY(std::holds_alternative<Admitted>(*out));
        stages << std::get<Admitted>(*out).stage;
    }
    int largest = 0;
    for (int s = 1; s < config.stages; ++s)
        if (config.stageParameterCount(s) > config.stageParameterCount(largest))
            largest = s;
    QCOMPARE(stages, (QList<int>{0, 1, 2, 3, largest}));

    Result<std::vector<StageLoad>> loads = service.stageLoads();
    QVERIFY2(loads, failure(loads));
    QCOMPARE(int(loads->size()), 4);
    QCOMPARE((*loads)[std::size_t(largest)].nodes, 2);
    QCOMPARE((*loads)[std::size_t(largest)].gflops, 80000.0);
}

void TestAdmissionService::fullSwarmWaitlists() {
    AssignmentSettings limits;
    limits.maxNodesTotal = 1;
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), limits));
    const Identity first = newIdentity();
    Result<AdmissionOutcome> in = service.admit(request(service, first, gpuHardware(24)), kNow + 1);
    QVERIFY2(in, failure(in));
    QVERIFY(std::holds_alternative<Admitted>(*in));

    const Identity second = newIdentity();
    Result<AdmissionOutcome> out = service.admit(request(service, second, gpuHardware(24)), kNow + 2);
    QVERIFY2(out, failure(out));
    QCOMPARE(httpStatusOf(*out), 503);
    QVERIFY(std::get<Waitlisted>(*out).retryAfterSeconds > 0);
    QVERIFY(!NodeRegistry(*m_db).find(second.nodeId())->has_value());

    // The node already in does not compete with itself when it comes back.
    Result<AdmissionOutcome> back = service.admit(request(service, first, gpuHardware(24)), kNow + 3);
    QVERIFY2(back, failure(back));
    QVERIFY(std::holds_alternative<Admitted>(*back));
}

void TestAdmissionService::challengeNeedsAKey() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    Result<QString> bad = service.challenge(QStringLiteral("not-a-key"), kNow);
    QVERIFY(!bad);
    QVERIFY2(bad.message().starts_with("node_key:"), bad.message().c_str());
    const Identity id = newIdentity();
    Result<QString> a = service.challenge(id.publicKeyBase64(), kNow);
    Result<QString> b = service.challenge(id.publicKeyBase64(), kNow);
    QVERIFY2(a && b, "challenge failed");
    QVERIFY(*a != *b);
    QVERIFY(Identity::fromBase64Url(*a, 32));
}

void TestAdmissionService::failingNonceTableIsAnErrorNot401() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    const protocol::AdmissionClaims claims = request(service, newIdentity(), gpuHardware(24));
    // The transaction still begins, so it is the nonce's UPDATE that fails.
    QSqlQuery drop(m_db->connection());
    QVERIFY2(drop.exec(QStringLiteral("DROP TABLE admission_nonces")), qPrintable(drop.lastError().text()));
    Result<AdmissionOutcome> outcome = service.admit(claims, kNow + 1);
    QVERIFY(!outcome); // an error: AdmissionApi answers 500
    QVERIFY2(outcome.message().find("admission_nonces") != std::string::npos, outcome.message().c_str());
}

namespace {

int nonceRows(Database& db) {
    QSqlQuery q(db.connection());
    return q.exec(QStringLiteral("SELECT COUNT(*) FROM admission_nonces")) && q.next() ? q.value(0).toInt()
                                                                                       : -1;
}

} // namespace

// Tried: challenges (nothing written), then correctly signed admissions with a made-up nonce, a
// nonce issued to another key, a nonce with one byte of its MAC changed, and one whose expiry was
// moved later: each is 401 naming the nonce, and the nonce table stays empty: only the genuine one,
// spent, is written.
void TestAdmissionService::madeUpOrForeignNoncesCostNoWrite() {
    AdmissionService service(*m_db, AssignmentPolicy(preset("small"), {}));
    const Identity id = newIdentity();
    const Identity other = newIdentity();
    for (int i = 0; i < 10; ++i)
        QVERIFY(service.challenge(id.publicKeyBase64(), kNow));
    QCOMPARE(nonceRows(*m_db), 0);

    const QString genuine = *service.challenge(id.publicKeyBase64(), kNow);
    QByteArray bytes = *Identity::fromBase64Url(genuine, 32);
    QByteArray macFlipped = bytes;
    macFlipped[31] = char(macFlipped[31] ^ 1);
    QByteArray later = bytes;
    later[14] = char(later[14] + 1); // the expiry's low bytes: 256 ms later
    const QStringList refused{Identity::toBase64Url(QByteArray(32, 'x')),
                              *service.challenge(other.publicKeyBase64(), kNow),
                              Identity::toBase64Url(macFlipped), Identity::toBase64Url(later)};
    for (const QString& nonce : refused) {
        Result<protocol::AdmissionClaims> claims = protocol::parseAdmissionRequest(
            protocol::makeAdmissionRequest(id, nonce, gpuHardware(24), bench(), QStringLiteral("0.2.0")));
        QVERIFY2(claims, failure(claims));
        Result<AdmissionOutcome> out = service.admit(*claims, kNow + 1);
        QVERIFY2(out, failure(out));
        QVERIFY2(std::holds_alternative<Unauthorized>(*out), qPrintable(nonce));
        QVERIFY2(std::get<Unauthorized>(*out).reason.starts_with("nonce:"),
                 std::get<Unauthorized>(*out).reason.c_str());
    }
    QCOMPARE(nonceRows(*m_db), 0);
    Result<protocol::AdmissionClaims> claims = protocol::parseAdmissionRequest(
        protocol::makeAdmissionRequest(id, genuine, gpuHardware(24), bench(), QStringLiteral("0.2.0")));
    QVERIFY(claims);
    Result<AdmissionOutcome> out = service.admit(*claims, kNow + 1);
    QVERIFY2(out && std::holds_alternative<Admitted>(*out), "the genuine nonce was refused");
    QCOMPARE(nonceRows(*m_db), 1);
}

// Tried: a nonce issued by one service, spent through another made with the same secret (what a
// restarted coordinator is: the secret comes from its key), and through one with another secret.
void TestAdmissionService::noncesOutliveTheServiceWithTheSameSecret() {
    AdmissionSettings settings;
    settings.nonceSecret = QByteArray(32, '\x07');
    const Identity id = newIdentity();
    QString nonce;
    {
        AdmissionService before(*m_db, AssignmentPolicy(preset("small"), {}), settings);
        nonce = *before.challenge(id.publicKeyBase64(), kNow);
    }
    Result<protocol::AdmissionClaims> claims = protocol::parseAdmissionRequest(
        protocol::makeAdmissionRequest(id, nonce, gpuHardware(24), bench(), QStringLiteral("0.2.0")));
    QVERIFY(claims);
    AdmissionSettings otherSecret = settings;
    otherSecret.nonceSecret = QByteArray(32, '\x08');
    AdmissionService stranger(*m_db, AssignmentPolicy(preset("small"), {}), otherSecret);
    Result<AdmissionOutcome> out = stranger.admit(*claims, kNow + 1);
    QVERIFY(out && std::holds_alternative<Unauthorized>(*out));
    AdmissionService after(*m_db, AssignmentPolicy(preset("small"), {}), settings);
    out = after.admit(*claims, kNow + 1);
    QVERIFY2(out && std::holds_alternative<Admitted>(*out), "a nonce from before the restart was refused");
}

QTEST_GUILESS_MAIN(TestAdmissionService)
#include "test_admission_service.moc"
