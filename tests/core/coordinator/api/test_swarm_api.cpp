// SPDX-License-Identifier: Apache-2.0
// The operator page's JSON, in process on a real SQLite file with real signed admissions: nodes
// admitted through POST /v1/admission with and without a display name and team, hostile names
// refused with a 400 naming the field (and nothing stored); GET /v1/leaderboard shows opted-in
// names, "anonymous" for the rest and never a full node id, sums teams; GET /v1/nodes lists the
// online nodes per stage with their state, speed and credits; GET /v1/loss spans restarts; the
// answers are cached for a moment.
#include "common/Identity.h"
#include "common/WallClock.h"
#include "coordinator/admission/AdmissionService.h"
#include "coordinator/api/AdmissionApi.h"
#include "coordinator/api/Metrics.h"
#include "coordinator/api/StatusApi.h"
#include "coordinator/api/SwarmApi.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/StageVersionStore.h"
#include "coordinator/store/TrainingStore.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using http::HttpRequest;
using http::HttpResponse;

namespace {

template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

constexpr qint64 kCredit = 1'000'000;

QJsonObject hardware() {
    return QJsonObject{
        {u"device"_qs, u"cpu"_qs}, {u"name"_qs, u"test CPU"_qs}, {u"memory_bytes"_qs, qint64(8) << 30}};
}

QJsonObject bench() {
    return QJsonObject{{u"gflops"_qs, 50.0}, {u"dtype"_qs, u"fp32"_qs}};
}

HttpRequest post(const QByteArray& body) {
    HttpRequest r;
    r.method = "POST";
    r.body = body;
    r.peerAddress = QHostAddress(QStringLiteral("192.0.2.7"));
    return r;
}

QJsonObject json(const HttpResponse& r) {
    return QJsonDocument::fromJson(r.body).object();
}

Result<QByteArray> fakeSign(const QByteArray&) {
    return QByteArray(64, 's');
}

} // namespace

class TestSwarmApi final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();

    void leaderboardShowsOnlyOptedInNames();
    void hostileProfilesAre400AndStoreNothing_data();
    void hostileProfilesAre400AndStoreNothing();
    void nodesPerStageWithStateSpeedAndCredits();
    void lossSpansRestarts();
    void answersAreCachedForAMoment();

private:
    // Challenge and signed admission through the HTTP handlers; the admission's response.
    HttpResponse admit(const Identity& id, const protocol::PublicProfile& profile = {});
    HttpResponse admitRaw(const Identity& id, const std::function<QByteArray(QJsonObject)>& body);
    Identity newIdentity();
    void grant(const QString& nodeId, qint64 microCredits);

    QTemporaryDir m_dir;
    int m_files = 0;
    std::unique_ptr<Database> m_db;
    std::unique_ptr<AdmissionService> m_service;
    std::unique_ptr<AdmissionApi> m_admission;
    Metrics m_metrics;
    gpu::ModelConfig m_model;
};

void TestSwarmApi::initTestCase() {
    QVERIFY(m_dir.isValid());
    Result<gpu::ModelConfig> tiny = gpu::ModelConfig::preset("tiny");
    QVERIFY2(tiny, failure(tiny));
    m_model = *tiny;
    m_model.stages = 2;
}

void TestSwarmApi::init() {
    Result<std::unique_ptr<Database>> db =
        Database::open(u"sqlite:"_qs + m_dir.filePath(u"db%1.sqlite"_qs.arg(++m_files)), m_dir.path());
    QVERIFY2(db, failure(db));
    QVERIFY((*db)->migrate());
    m_db = std::move(*db);
    // Admission answers with the stage's manifest: each stage has a published version.
    for (int stage = 0; stage < m_model.stages; ++stage)
        QVERIFY(StageVersionStore(*m_db).add(
            {stage, 1, 0, u"stage-%1-v1.safetensors"_qs.arg(stage), 1, u"00"_qs, u"{}"_qs, 0}));
    m_service = std::make_unique<AdmissionService>(*m_db, AssignmentPolicy(m_model, {}));
    m_admission = std::make_unique<AdmissionApi>(*m_service, *m_db, m_metrics);
}

void TestSwarmApi::cleanup() {
    m_admission.reset();
    m_service.reset();
    m_db.reset();
}

Identity TestSwarmApi::newIdentity() {
    Result<Identity> id = Identity::generate();
    if (!id)
        qFatal("%s", id.message().c_str());
    return *id;
}

HttpResponse TestSwarmApi::admitRaw(const Identity& id, const std::function<QByteArray(QJsonObject)>& body) {
    const HttpResponse challenge = m_admission->challenge(
        post(QJsonDocument(QJsonObject{{u"node_key"_qs, id.publicKeyBase64()}}).toJson()));
    const QString nonce = json(challenge).value(u"nonce").toString();
    return m_admission->admit(post(body(QJsonObject{{u"nonce"_qs, nonce}})));
}

HttpResponse TestSwarmApi::admit(const Identity& id, const protocol::PublicProfile& profile) {
    return admitRaw(id, [&](const QJsonObject& challenge) {
        return QJsonDocument(protocol::makeAdmissionRequest(id, challenge.value(u"nonce").toString(),
                                                            hardware(), bench(), u"0.2.0"_qs, profile))
            .toJson(QJsonDocument::Compact);
    });
}

void TestSwarmApi::grant(const QString& nodeId, qint64 microCredits) {
    Result<CreditReceipt> r =
        CreditLedger(*m_db).append(nodeId, WallClock::nowMs(), microCredits * 1000, microCredits, fakeSign);
    QVERIFY2(r, failure(r));
}

void TestSwarmApi::leaderboardShowsOnlyOptedInNames() {
    const Identity ada = newIdentity(), anon = newIdentity(), teamOnly = newIdentity(), cy = newIdentity();
    QCOMPARE(admit(ada, {u" Ada Lovelace "_qs, u"Analytical"_qs}).status, 200);
    QCOMPARE(admit(anon).status, 200);
    QCOMPARE(admit(teamOnly, {QString(), u"Analytical"_qs}).status, 200);
    QCOMPARE(admit(cy, {u"Cy"_qs, QString()}).status, 200);
    grant(ada.nodeId(), 2 * kCredit);
    grant(anon.nodeId(), 1'234'567 * kCredit);
    grant(teamOnly.nodeId(), 3 * kCredit);
    grant(cy.nodeId(), kCredit / 2);

    SwarmApi api(*m_db, SwarmApiSettings{m_model.stages, 100, 50, std::chrono::milliseconds(0)});
    const HttpResponse r = api.leaderboard(HttpRequest{});
    QCOMPARE(r.status, 200);
    QCOMPARE(r.headers.value("Content-Type"), QByteArray("application/json"));
    const QJsonObject board = json(r);
    const QJsonArray nodes = board.value(u"nodes").toArray();
    QCOMPARE(nodes.size(), 4);
    const QJsonObject first = nodes.at(0).toObject();
    QCOMPARE(first.value(u"rank").toInt(), 1);
    QCOMPARE(first.value(u"name").toString(), u"anonymous"_qs);
    QCOMPARE(first.value(u"anonymous").toBool(), true);
    QCOMPARE(first.value(u"team").toString(), QString());
    QCOMPARE(first.value(u"micro_credits").toInteger(), 1'234'567 * kCredit);
    QCOMPARE(first.value(u"credits").toDouble(), 1'234'567.0);
    QCOMPARE(first.value(u"credits_24h").toDouble(), 1'234'567.0);
    QCOMPARE(first.value(u"node").toString(), anon.nodeId().left(12));
    const QJsonObject second = nodes.at(1).toObject();
    QCOMPARE(second.value(u"name").toString(), u"anonymous"_qs); // a team, but no name
    QCOMPARE(second.value(u"team").toString(), u"Analytical"_qs);
    const QJsonObject third = nodes.at(2).toObject();
    QCOMPARE(third.value(u"name").toString(), u"Ada Lovelace"_qs); // stored trimmed
    QCOMPARE(third.value(u"anonymous").toBool(), false);
    QCOMPARE(nodes.at(3).toObject().value(u"name").toString(), u"Cy"_qs);
    QCOMPARE(nodes.at(3).toObject().value(u"credits").toDouble(), 0.5);
    // No full node id anywhere on a public board.
    for (const Identity* id : {&ada, &anon, &teamOnly, &cy})
        QVERIFY(!r.body.contains(id->nodeId().toLatin1()));

    const QJsonArray teams = board.value(u"teams").toArray();
    QCOMPARE(teams.size(), 1);
    QCOMPARE(teams.at(0).toObject().value(u"team").toString(), u"Analytical"_qs);
    QCOMPARE(teams.at(0).toObject().value(u"members").toInt(), 2);
    QCOMPARE(teams.at(0).toObject().value(u"micro_credits").toInteger(), 5 * kCredit);
    QCOMPARE(board.value(u"size").toInt(), 50);
}

void TestSwarmApi::hostileProfilesAre400AndStoreNothing_data() {
    QTest::addColumn<QByteArray>("profile"); // raw JSON, as a hostile client may send it
    QTest::addColumn<QString>("field");
    QTest::newRow("33 characters") << QByteArray(R"({"display_name":")" + QByteArray(33, 'x') + R"("})")
                                   << u"profile.display_name"_qs;
    QTest::newRow("a megabyte") << QByteArray(R"({"team":")" + QByteArray(1 << 20, 'x') + R"("})")
                                << u"profile.team"_qs;
    QTest::newRow("newline") << QByteArray(R"({"display_name":"Ada\nLovelace"})")
                             << u"profile.display_name"_qs;
    QTest::newRow("terminal escape") << QByteArray(R"({"display_name":"\u001b[2J"})")
                                     << u"profile.display_name"_qs;
    QTest::newRow("NUL") << QByteArray(R"({"team":"a\u0000b"})") << u"profile.team"_qs;
    QTest::newRow("bidi override") << QByteArray(R"({"display_name":"evil\u202Etxt.exe"})")
                                   << u"profile.display_name"_qs;
    // Refused by the profile's check, or as JSON by the parser: a 400 either way.
    QTest::newRow("lone surrogate") << QByteArray(R"({"display_name":"a\ud800b"})") << QString();
    QTest::newRow("a number") << QByteArray(R"({"team":42})") << u"profile.team"_qs;
    QTest::newRow("an array") << QByteArray(R"(["Ada"])") << u"profile"_qs;
    QTest::newRow("unknown member") << QByteArray(R"({"display_name":"Ada","url":"https://x"})")
                                    << u"profile.url"_qs;
}

void TestSwarmApi::hostileProfilesAre400AndStoreNothing() {
    QFETCH(QByteArray, profile);
    QFETCH(QString, field);
    const Identity id = newIdentity();
    const HttpResponse r = admitRaw(id, [&](const QJsonObject& challenge) {
        QByteArray body =
            QJsonDocument(protocol::makeAdmissionRequest(id, challenge.value(u"nonce").toString(), hardware(),
                                                         bench(), u"0.2.0"_qs))
                .toJson(QJsonDocument::Compact);
        body.chop(1); // the closing brace: the profile goes in as raw bytes
        return QByteArray(body + ",\"profile\":" + profile + '}');
    });
    QCOMPARE(r.status, 400);
    const QString error = json(r).value(u"error").toString();
    QVERIFY2(error.startsWith(field), qPrintable(error));
    QVERIFY(error.size() < 200); // the message never echoes what was sent
    Result<qint64> stored = NodeRegistry(*m_db).count();
    QVERIFY2(stored, failure(stored));
    QCOMPARE(*stored, qint64(0));
    QCOMPARE(m_metrics.admissions().value(u"bad_request"_qs) > 0, true);
}

void TestSwarmApi::nodesPerStageWithStateSpeedAndCredits() {
    const Identity ada = newIdentity(), anon = newIdentity(), gone = newIdentity();
    QCOMPARE(admit(ada, {u"Ada"_qs, u"Analytical"_qs}).status, 200);
    QCOMPARE(admit(anon).status, 200);
    QCOMPARE(admit(gone, {u"Gone"_qs, QString()}).status, 200);
    QVERIFY(NodeRegistry(*m_db).setState(gone.nodeId(), NodeState::Offline, WallClock::nowMs()));
    grant(ada.nodeId(), 1500 * kCredit);
    const int adaStage = *(*NodeRegistry(*m_db).find(ada.nodeId()))->stage;
    const int anonStage = *(*NodeRegistry(*m_db).find(anon.nodeId()))->stage;
    QVERIFY(adaStage != anonStage); // spread by load

    SwarmApi api(*m_db, SwarmApiSettings{m_model.stages, 100, 50, std::chrono::milliseconds(0)});
    api.setLive([&](const QString& node) {
        return node == ada.nodeId() ? NodeLive{NodeActivity::Training, 0.002}
                                    : NodeLive{NodeActivity::Paused, {}};
    });
    const HttpResponse r = api.nodes(HttpRequest{});
    QCOMPARE(r.status, 200);
    const QJsonObject body = json(r);
    QCOMPARE(body.value(u"nodes_online").toInt(), 2);
    const QJsonArray stages = body.value(u"stages").toArray();
    QCOMPARE(stages.size(), 2);
    for (int s = 0; s < 2; ++s) {
        const QJsonObject stage = stages.at(s).toObject();
        QCOMPARE(stage.value(u"stage").toInt(), s);
        QCOMPARE(stage.value(u"nodes_online").toInt(), 1);
        QCOMPARE(stage.value(u"more").toInt(), 0);
        QCOMPARE(stage.value(u"nodes").toArray().size(), 1);
    }
    const QJsonObject a = stages.at(adaStage).toObject().value(u"nodes").toArray().at(0).toObject();
    QCOMPARE(a.value(u"name").toString(), u"Ada"_qs);
    QCOMPARE(a.value(u"team").toString(), u"Analytical"_qs);
    QCOMPARE(a.value(u"state").toString(), u"training"_qs);
    QCOMPARE(a.value(u"tokens_per_second").toDouble(), 500.0);
    QCOMPARE(a.value(u"gflops").toDouble(), 50.0);
    QCOMPARE(a.value(u"credits").toDouble(), 1500.0);
    QCOMPARE(a.value(u"node").toString(), ada.nodeId().left(12));
    const QJsonObject n = stages.at(anonStage).toObject().value(u"nodes").toArray().at(0).toObject();
    QCOMPARE(n.value(u"name").toString(), u"anonymous"_qs);
    QCOMPARE(n.value(u"anonymous").toBool(), true);
    QCOMPARE(n.value(u"state").toString(), u"paused"_qs);
    QVERIFY(n.value(u"tokens_per_second").isNull()); // not measured yet
    QVERIFY(!r.body.contains("Gone"));               // offline: not listed
}

void TestSwarmApi::lossSpansRestarts() {
    // Two processes of one run wrote steps 1-3 and 4-5.
    for (int process = 0; process < 2; ++process) {
        TrainingStore store(*m_db);
        Result<TrainingState> state = store.resume(1000 * process);
        QVERIFY2(state, failure(state));
        for (int step = process == 0 ? 1 : 4; step <= (process == 0 ? 3 : 5); ++step)
            store.stepped(step, 6.0 - step, *state, 1000 * process + step);
        QVERIFY(store.flush());
    }
    StatusApiSettings settings{m_model, u"key"_qs, u"0.1.0"_qs, 0, std::chrono::milliseconds(0)};
    StatusApi status(*m_db, m_metrics, settings);
    const HttpResponse r = status.loss(HttpRequest{});
    QCOMPARE(r.status, 200);
    const QJsonArray points = json(r).value(u"points").toArray();
    QCOMPARE(points.size(), 5);
    QCOMPARE(points.at(0).toArray().at(0).toInteger(), qint64(1));
    QCOMPARE(points.at(4).toArray().at(0).toInteger(), qint64(5));
    QCOMPARE(points.at(4).toArray().at(1).toDouble(), 1.0);
}

void TestSwarmApi::answersAreCachedForAMoment() {
    const Identity ada = newIdentity();
    QCOMPARE(admit(ada, {u"Ada"_qs, QString()}).status, 200);
    grant(ada.nodeId(), kCredit);
    SwarmApi api(*m_db, SwarmApiSettings{m_model.stages, 100, 50, std::chrono::minutes(1)});
    const QByteArray before = api.leaderboard(HttpRequest{}).body;
    grant(ada.nodeId(), kCredit);
    QCOMPARE(api.leaderboard(HttpRequest{}).body, before); // within the minute: the same answer
    SwarmApi fresh(*m_db, SwarmApiSettings{m_model.stages, 100, 50, std::chrono::milliseconds(0)});
    QCOMPARE(json(fresh.leaderboard(HttpRequest{}))
                 .value(u"nodes")
                 .toArray()
                 .at(0)
                 .toObject()
                 .value(u"credits")
                 .toDouble(),
             2.0);
}

QTEST_GUILESS_MAIN(TestSwarmApi)
#include "test_swarm_api.moc"
