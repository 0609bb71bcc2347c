// SPDX-License-Identifier: Apache-2.0
// The real tessera-coordinator process on PostgreSQL (a throwaway server this test starts):
// admission, a shard manifest, a node's session counted in /v1/status, SIGTERM, and a restart on
// the same data dir and database that resumes the run and still knows the node and its nonce.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "PostgresServer.h"
#include "base/ShardManifest.h"
#include "common/Identity.h"
#include "protocol/ManifestSignature.h"

#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QSslConfiguration>
#include <QTemporaryDir>
#include <QTest>
#include <QWebSocket>

#include <memory>

using namespace tessera;

using Reply = test::HttpReply;

class TestCoordinatorPostgres final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void runsOnPostgresAndResumesAfterSigterm();

private:
    // Plain HTTP (--insecure-loopback): no TLS configuration to give.
    Reply send(const QString& base, const QByteArray& method, const QString& path,
               const QByteArray& body = {}) {
        return test::httpRequest(m_net, QSslConfiguration(), base + path, method, body);
    }
    QJsonObject nodes(const QString& base) {
        return send(base, "GET", QStringLiteral("/v1/status")).json().value(u"nodes").toObject();
    }

    QTemporaryDir m_dir;
    std::unique_ptr<test::PostgresServer> m_pg;
    QNetworkAccessManager m_net;
};

void TestCoordinatorPostgres::initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo(coordinatorProgram()).isExecutable(), qPrintable(coordinatorProgram()));
    if (test::PostgresServer::findBinDir().isEmpty())
        QSKIP(test::PostgresServer::kNotInstalled);
    Result<std::unique_ptr<test::PostgresServer>> pg = test::PostgresServer::start();
    QVERIFY2(pg, pg ? "" : pg.message().c_str());
    m_pg = std::move(*pg);
}

void TestCoordinatorPostgres::cleanupTestCase() {
    m_pg.reset();
}

void TestCoordinatorPostgres::runsOnPostgresAndResumesAfterSigterm() {
    Result<QString> url = m_pg->createDatabase();
    QVERIFY2(url, url ? "" : url.message().c_str());
    QVERIFY(url->contains(u"?host=/")); // a unix socket directory, given as a query parameter
    const QString runDir = m_dir.filePath(QStringLiteral("run"));
    const QStringList args{QStringLiteral("--data-dir"),
                           runDir,
                           QStringLiteral("--listen"),
                           QStringLiteral("127.0.0.1:0"),
                           QStringLiteral("--insecure-loopback"),
                           QStringLiteral("--db"),
                           *url,
                           QStringLiteral("--stages"),
                           QStringLiteral("2")};
    auto server = std::make_unique<CoordinatorProcess>(args);
    QVERIFY2(server->waitReady(), server->err().constData());
    QVERIFY(server->out().contains("created the run"));
    QVERIFY2(server->printed("database").startsWith(u"postgresql://tessera@/"),
             qPrintable(server->printed("database")));
    QVERIFY(!QFileInfo::exists(runDir + QStringLiteral("/coordinator.sqlite"))); // not SQLite after all
    const QString key = server->printed("coordinator key");

    // challenge → signed admission.
    Result<Identity> id = Identity::generate();
    QVERIFY2(id, id ? "" : id.message().c_str());
    QJsonObject request;
    const Reply admitted = test::admitNode(m_net, QSslConfiguration(), server->url(), *id, &request);
    const QByteArray requestBody = QJsonDocument(request).toJson();
    QVERIFY2(admitted.status == 200, admitted.body.constData());
    QCOMPARE(admitted.json().value(u"node_id").toString(), id->nodeId());
    const int stage = admitted.json().value(u"stage").toInt(-1);
    QVERIFY(stage == 0 || stage == 1);

    // The stage's manifest, read back from PostgreSQL, still carries a valid signature.
    const Reply manifest = send(server->url(), "GET", QStringLiteral("/v1/shards/%1/manifest").arg(stage));
    QCOMPARE(manifest.status, 200);
    Result<gpu::ShardManifest> m = gpu::ShardManifest::fromJson(manifest.body.toStdString());
    QVERIFY2(m, m ? "" : m.message().c_str());
    QCOMPARE(m->stage, stage);
    QVERIFY(protocol::manifestSignatureValid(*m, *Identity::fromBase64Url(key, Identity::kPublicKeySize)));

    // The node opens its session; status counts it.
    QWebSocket session;
    QNetworkRequest open(
        QUrl(QString(server->url()).replace(u"http://"_qs, u"ws://"_qs) + u"/v1/session"_qs));
    open.setRawHeader("Authorization",
                      "Bearer " + admitted.json().value(u"session_token").toString().toLatin1());
    session.open(open);
    QVERIFY(QTest::qWaitFor([&] { return session.state() == QAbstractSocket::ConnectedState; }, 10'000));
    QString ack;
    connect(&session, &QWebSocket::textMessageReceived, this, [&](const QString& text) { ack = text; });
    session.sendTextMessage(QStringLiteral("{\"type\":\"heartbeat\"}"));
    QVERIFY(QTest::qWaitFor([&] { return !ack.isEmpty(); }, 10'000));
    QVERIFY2(ack.contains(u"heartbeat_ack"), qPrintable(ack));
    QCOMPARE(nodes(server->url()).value(u"online").toInt(), 1);
    QCOMPARE(nodes(server->url()).value(u"total").toInt(), 1);

    // SIGTERM: the session is closed as "going away" and the process exits 0.
    QCOMPARE(server->terminate(15'000), 0);
    QVERIFY(QTest::qWaitFor([&] { return session.state() == QAbstractSocket::UnconnectedState; }, 10'000));
    QCOMPARE(session.closeCode(), QWebSocketProtocol::CloseCodeGoingAway);

    // The same data dir and database: the run resumes and everything admitted is still known.
    server = std::make_unique<CoordinatorProcess>(args);
    QVERIFY2(server->waitReady(), server->err().constData());
    QVERIFY2(server->out().contains("resumed the run"), server->out().constData());
    QCOMPARE(server->printed("coordinator key"), key);
    const QJsonObject after = nodes(server->url());
    QCOMPARE(after.value(u"total").toInt(), 1);
    QCOMPARE(after.value(u"online").toInt(), 0); // its session ended with the old process
    QCOMPARE(send(server->url(), "GET", QStringLiteral("/v1/nodes/%1/credits").arg(id->nodeId())).status,
             200);
    const Reply replay = send(server->url(), "POST", QStringLiteral("/v1/admission"), requestBody);
    QCOMPARE(replay.status, 401);
    QVERIFY2(replay.json().value(u"error").toString().startsWith(u"nonce:"), replay.body.constData());
    QCOMPARE(server->terminate(15'000), 0);
}

QTEST_GUILESS_MAIN(TestCoordinatorPostgres)
#include "test_coordinator_postgres.moc"
