// SPDX-License-Identifier: Apache-2.0
// The real tessera-coordinator's admission at its limits: denied, waitlisted and unauthorized
// admissions, a client too old, after which it still serves and its database passes SQLite's
// integrity check.
#include "CoordinatorLimitsFixture.h"

using namespace tessera;
using namespace tessera::test;

class TestCoordinatorAdmissionLimits final : public CoordinatorLimitsFixture {
    Q_OBJECT

private Q_SLOTS:
    void nodeThatFitsNoStageIsDenied();
    void maxNodesWaitlistsWithRetryAfter();
    void maxNodesPerStageFillsEveryStageThenWaits();
    void nodesSpreadOverBothStages();
    void oldClientIsDenied();
    void badSignatureAndReplayAre401();
    void challengesWriteNothingAndOutliveARestart();
    void stillServingAndDatabaseIntact();
};

namespace {

// Rows in a run's admission_nonces (its SQLite opened read-only beside the process); -1 on failure.
int nonceRows(const QString& runDir) {
    const QString connection = QStringLiteral("nonce-rows");
    int rows = -1;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
        db.setDatabaseName(runDir + QStringLiteral("/coordinator.sqlite"));
        db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=5000"));
        if (db.open()) {
            QSqlQuery q(db);
            if (q.exec(QStringLiteral("SELECT COUNT(*) FROM admission_nonces")) && q.next())
                rows = q.value(0).toInt();
        }
        db.close();
    }
    QSqlDatabase::removeDatabase(connection);
    return rows;
}

} // namespace

// Tried: a model whose stages need ~4.4 GiB each (tiny's shape with an 8192-token context, so
// its shards stay small) and a node claiming 256 MiB, the least AdmissionClaims takes as sane.
// 403 saying what the smallest stage needs and what the node has; nothing is recorded. One byte
// less than 256 MiB is an implausible claim (400); an 8 GiB node fits.
void TestCoordinatorAdmissionLimits::nodeThatFitsNoStageIsDenied() {
    const QString config = m_dir.filePath(QStringLiteral("tiny-long.json"));
    QFile f(config);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "tiny-long", "vocab_size": 256, "d_model": 128, "n_layers": 8, "n_heads": 4,
                "n_kv_heads": 2, "ffn_hidden": 384, "max_seq_len": 8192, "stages": 2})");
    f.close();
    CoordinatorProcess server({QStringLiteral("--data-dir"), m_dir.filePath(QStringLiteral("deny")),
                               QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                               QStringLiteral("--insecure-loopback"), QStringLiteral("--model"), config});
    QVERIFY2(server.waitReady(), server.err().constData());

    const Identity small = newIdentity();
    Reply r = admit(server.url(), small, protocol::kMinMemoryBytes);
    QVERIFY2(r.status == 403, r.body.constData());
    QVERIFY2(r.headers.value("content-type").startsWith("application/json"), r.body.constData());
    const QString why = r.error();
    QVERIFY2(why.startsWith(u"hardware.memory_bytes: needs ") &&
                 why.contains(u"for the smallest stage of model 'tiny-long'") &&
                 why.contains(u"this computer has 256.0 MiB"),
             qPrintable(why));
    QJsonObject s = status(server.url());
    QCOMPARE(s.value(u"nodes").toObject().value(u"total").toInt(-1), 0);
    QCOMPARE(s.value(u"nodes").toObject().value(u"online").toInt(-1), 0);

    r = admit(server.url(), newIdentity(), protocol::kMinMemoryBytes - 1);
    QCOMPARE(r.status, 400);
    QVERIFY2(r.error().startsWith(u"hardware.memory_bytes:"), qPrintable(r.error()));

    r = admit(server.url(), newIdentity(), 8 * kGiB);
    QVERIFY2(r.status == 200, r.body.constData());
    s = status(server.url());
    QCOMPARE(s.value(u"nodes").toObject().value(u"online").toInt(-1), 1);
}

// Tried: --max-nodes 1 --waitlist-retry-after 42. The first node is admitted; the second fits but
// is told 503 with retry_after 42 and Retry-After: 42; the first, admitted again, is not counted
// against itself.
void TestCoordinatorAdmissionLimits::maxNodesWaitlistsWithRetryAfter() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("max-nodes"),
              {QStringLiteral("--insecure-loopback"), QStringLiteral("--max-nodes"), QStringLiteral("1"),
               QStringLiteral("--waitlist-retry-after"), QStringLiteral("42")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const Identity first = newIdentity();
    Reply r = admit(server->url(), first);
    QVERIFY2(r.status == 200, r.body.constData());
    QCOMPARE(r.json().value(u"stage").toInt(-1), 0);

    r = admit(server->url(), newIdentity());
    QVERIFY2(r.status == 503, r.body.constData());
    QCOMPARE(r.json().value(u"retry_after").toInt(), 42);
    QCOMPARE(r.headers.value("retry-after"), QByteArrayLiteral("42"));
    QVERIFY2(r.error().contains(u"the swarm is full (1 nodes)"), qPrintable(r.error()));

    r = admit(server->url(), first);
    QVERIFY2(r.status == 200, r.body.constData());
    QCOMPARE(status(server->url()).value(u"nodes").toObject().value(u"online").toInt(-1), 1);
}

// Tried: --max-nodes-per-stage 1 on two stages. Two nodes land on different stages; the third
// fits either but both are full: 503 with the default retry_after of 300 s.
void TestCoordinatorAdmissionLimits::maxNodesPerStageFillsEveryStageThenWaits() {
    std::unique_ptr<CoordinatorProcess> server =
        start(QStringLiteral("per-stage"), {QStringLiteral("--insecure-loopback"),
                                            QStringLiteral("--max-nodes-per-stage"), QStringLiteral("1")});
    QVERIFY2(server->waitReady(), server->err().constData());
    const Reply a = admit(server->url(), newIdentity());
    const Reply b = admit(server->url(), newIdentity());
    QVERIFY2(a.status == 200, a.body.constData());
    QVERIFY2(b.status == 200, b.body.constData());
    QCOMPARE(a.json().value(u"stage").toInt(-1) + b.json().value(u"stage").toInt(-1), 1); // 0 and 1

    const Reply c = admit(server->url(), newIdentity());
    QVERIFY2(c.status == 503, c.body.constData());
    QCOMPARE(c.json().value(u"retry_after").toInt(), 300);
    QCOMPARE(c.headers.value("retry-after"), QByteArrayLiteral("300"));
    QVERIFY2(c.error().contains(u"every stage this node fits is full (1 nodes each)"), qPrintable(c.error()));
    const QJsonArray stages = status(server->url()).value(u"stages").toArray();
    QCOMPARE(stages.size(), 2);
    for (const QJsonValue& stage : stages)
        QCOMPARE(stage.toObject().value(u"nodes_online").toInt(-1), 1);
}

// Tried: six equal nodes admitted on the shared run, no limits. Both stages get nodes, and
// /v1/status's per-stage counts match the stages the admissions answered.
void TestCoordinatorAdmissionLimits::nodesSpreadOverBothStages() {
    const QJsonArray before = status(m_server->url()).value(u"stages").toArray();
    QCOMPARE(before.size(), 2);
    int admitted[2] = {0, 0};
    for (int i = 0; i < 6; ++i) {
        const Reply r = admit(m_server->url(), newIdentity());
        QVERIFY2(r.status == 200, r.body.constData());
        const int stage = r.json().value(u"stage").toInt(-1);
        QVERIFY(stage == 0 || stage == 1);
        ++admitted[stage];
    }
    QVERIFY2(admitted[0] >= 2 && admitted[1] >= 2,
             qPrintable(QStringLiteral("stage 0: %1, stage 1: %2").arg(admitted[0]).arg(admitted[1])));
    const QJsonArray after = status(m_server->url()).value(u"stages").toArray();
    QCOMPARE(after.size(), 2);
    for (int s = 0; s < 2; ++s)
        QCOMPARE(after.at(s).toObject().value(u"nodes_online").toInt() -
                     before.at(s).toObject().value(u"nodes_online").toInt(),
                 admitted[s]);
}

// Tried: --min-client-version 0.3.0 and a node claiming 0.2.0: 403 (AdmissionService answers an
// old client with Denied, not 426) naming both versions, with the reason "client_too_old" the
// desktop app explains; /v1/info advertises the minimum, and 0.3.0 is admitted. Then
// --min-client-version 0.1.0, below what speaks this protocol (frames v2): the coordinator holds
// to 0.2.0, and a 0.1.0 node (Tessera 0.1, frames v1) is told to update in words.
void TestCoordinatorAdmissionLimits::oldClientIsDenied() {
    std::unique_ptr<CoordinatorProcess> server = start(
        QStringLiteral("min-version"), {QStringLiteral("--insecure-loopback"),
                                        QStringLiteral("--min-client-version"), QStringLiteral("0.3.0")});
    QVERIFY2(server->waitReady(), server->err().constData());
    QCOMPARE(
        send(server->url(), "GET", QStringLiteral("/v1/info")).json().value(u"min_client_version").toString(),
        QStringLiteral("0.3.0"));
    Reply r = admit(server->url(), newIdentity(), 8 * kGiB, QStringLiteral("0.2.0"));
    QVERIFY2(r.status == 403, r.body.constData());
    QVERIFY2(r.error().startsWith(u"client_version: 0.2.0") && r.error().contains(u"(0.3.0)") &&
                 r.error().contains(u"update Tessera"),
             qPrintable(r.error()));
    QCOMPARE(r.json().value(u"reason").toString(), QStringLiteral("client_too_old"));
    r = admit(server->url(), newIdentity(), 8 * kGiB, QStringLiteral("0.3.0"));
    QVERIFY2(r.status == 200, r.body.constData());

    std::unique_ptr<CoordinatorProcess> lenient =
        start(QStringLiteral("min-version-floor"),
              {QStringLiteral("--insecure-loopback"), QStringLiteral("--min-client-version"),
               QStringLiteral("0.1.0")});
    QVERIFY2(lenient->waitReady(), lenient->err().constData());
    QCOMPARE(send(lenient->url(), "GET", QStringLiteral("/v1/info"))
                 .json()
                 .value(u"min_client_version")
                 .toString(),
             QStringLiteral("0.2.0"));
    r = admit(lenient->url(), newIdentity(), 8 * kGiB, QStringLiteral("0.1.0"));
    QVERIFY2(r.status == 403 && r.error().contains(u"update Tessera"), r.body.constData());
}

// Tried: a signed admission with one character of its signature changed (401, and the nonce is
// left unspent, so the genuine request still succeeds), then that genuine request replayed
// (401: the nonce is spent).
void TestCoordinatorAdmissionLimits::badSignatureAndReplayAre401() {
    const Identity id = newIdentity();
    const Reply challenge =
        send(m_server->url(), "POST", QStringLiteral("/v1/admission/challenge"),
             QJsonDocument(QJsonObject{{QStringLiteral("node_key"), id.publicKeyBase64()}}).toJson());
    QCOMPARE(challenge.status, 200);
    const QJsonObject genuine =
        protocol::makeAdmissionRequest(id, challenge.json().value(u"nonce").toString(), test::testHardware(),
                                       test::testBench(), QStringLiteral("0.2.0"));
    QJsonObject forged = genuine;
    QString signature = genuine.value(u"signature").toString();
    QVERIFY(!signature.isEmpty());
    signature[0] = signature[0] == u'A' ? u'B' : u'A'; // the first character: all six bits count
    forged.insert(QStringLiteral("signature"), signature);

    Reply r = send(m_server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(forged).toJson());
    QVERIFY2(r.status == 401, r.body.constData());
    QVERIFY2(r.error().startsWith(u"signature:"), qPrintable(r.error()));

    r = send(m_server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(genuine).toJson());
    QVERIFY2(r.status == 200, r.body.constData());
    r = send(m_server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(genuine).toJson());
    QVERIFY2(r.status == 401, r.body.constData());
    QVERIFY2(r.error().startsWith(u"nonce:"), qPrintable(r.error()));
}

// Tried: 30 challenges on a run of its own: the nonces table gets no row (a challenge costs no
// write). The coordinator is then stopped and started again on the same data dir; the node signs
// with a nonce it was given before the restart and is admitted (one row now: the nonce spent), and
// the same request again is refused as a replay.
void TestCoordinatorAdmissionLimits::challengesWriteNothingAndOutliveARestart() {
    const QString name = QStringLiteral("stateless-nonces");
    const QStringList options{QStringLiteral("--insecure-loopback")};
    std::unique_ptr<CoordinatorProcess> server = start(name, options);
    QVERIFY2(server->waitReady(), server->err().constData());
    const QString runDir = m_dir.filePath(name);
    const Identity id = newIdentity();
    const QByteArray body =
        QJsonDocument(QJsonObject{{QStringLiteral("node_key"), id.publicKeyBase64()}}).toJson();
    QString nonce;
    for (int i = 0; i < 30; ++i) {
        const Reply r = send(server->url(), "POST", QStringLiteral("/v1/admission/challenge"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        nonce = r.json().value(u"nonce").toString();
    }
    QCOMPARE(nonceRows(runDir), 0);

    server->stop();
    server = start(name, options);
    QVERIFY2(server->waitReady(), server->err().constData());
    const QJsonObject request = protocol::makeAdmissionRequest(id, nonce, test::testHardware(),
                                                               test::testBench(), QStringLiteral("0.2.0"));
    Reply r = send(server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(request).toJson());
    QVERIFY2(r.status == 200, r.body.constData());
    QCOMPARE(nonceRows(runDir), 1);
    r = send(server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(request).toJson());
    QVERIFY2(r.status == 401 && r.error().contains(u"already used"), r.body.constData());
}

// Tried: after everything above, the shared process still answers /v1/status, and its live
// SQLite database (opened read-only next to it) passes PRAGMA integrity_check.
void TestCoordinatorAdmissionLimits::stillServingAndDatabaseIntact() {
    const Reply r = get(QStringLiteral("/v1/status"));
    QCOMPARE(r.status, 200);
    // Nodes stay online only while heard from (30 s), so count every node ever admitted.
    QVERIFY(r.json().value(u"nodes").toObject().value(u"total").toInt() >= 7);

    const QString path = m_runDir + QStringLiteral("/coordinator.sqlite");
    QVERIFY(QFileInfo::exists(path));
    const QString connection = QStringLiteral("limits-integrity");
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
        db.setDatabaseName(path);
        db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY"));
        QVERIFY2(db.open(), qPrintable(db.lastError().text()));
        QSqlQuery q(db);
        QVERIFY2(q.exec(QStringLiteral("PRAGMA integrity_check")), qPrintable(q.lastError().text()));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toString(), QStringLiteral("ok"));
        QVERIFY(!q.next());
        db.close();
    }
    QSqlDatabase::removeDatabase(connection);
    QCOMPARE(get(QStringLiteral("/v1/info")).status, 200);
}

QTEST_GUILESS_MAIN(TestCoordinatorAdmissionLimits)
#include "test_coordinator_admission_limits.moc"
