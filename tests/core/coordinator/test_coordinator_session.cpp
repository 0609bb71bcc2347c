// SPDX-License-Identifier: Apache-2.0
// The real tessera-coordinator process over TLS: a node's /v1/session WebSocket (bearer token,
// heartbeats, bad frames, a silent node going offline, bad tokens refused with 1008) and its
// signed credit receipts at /v1/nodes/{id}/credits; and SIGTERM: sessions closed with 1001,
// exit 0, the node offline after a restart.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "common/Identity.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/Database.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QTemporaryDir>
#include <QTest>
#include <QWebSocket>

#include <memory>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

constexpr int kHeartbeatTimeoutMs = 1500; // the coordinator's, shortened for the test

using Reply = test::HttpReply;

// A node's end of /v1/session: what it received and how it was closed.
class SessionClient final {
public:
    SessionClient(const QSslConfiguration& ssl, const QUrl& url, const QByteArray& authorization) {
        m_socket.setSslConfiguration(ssl);
        QObject::connect(&m_socket, &QWebSocket::textMessageReceived, &m_socket, [this](const QString& m) {
            m_received << QJsonDocument::fromJson(m.toUtf8()).object();
        });
        QNetworkRequest request(url);
        if (!authorization.isEmpty())
            request.setRawHeader("Authorization", authorization);
        m_socket.open(request);
    }
    bool waitConnected() {
        return QTest::qWaitFor([this] { return m_socket.state() == QAbstractSocket::ConnectedState; },
                               10'000);
    }
    bool waitClosed(int ms = 10'000) {
        return QTest::qWaitFor([this] { return m_socket.state() == QAbstractSocket::UnconnectedState; }, ms);
    }
    // Sends one text frame and returns the next message back (empty when none came).
    QJsonObject exchange(const QString& text) {
        const qsizetype before = m_received.size();
        m_socket.sendTextMessage(text);
        if (!QTest::qWaitFor([&] { return m_received.size() > before; }, 10'000))
            return {};
        return m_received.at(before);
    }
    QJsonObject exchangeBinary(const QByteArray& data) {
        const qsizetype before = m_received.size();
        m_socket.sendBinaryMessage(data);
        if (!QTest::qWaitFor([&] { return m_received.size() > before; }, 10'000))
            return {};
        return m_received.at(before);
    }
    QJsonObject heartbeat() { return exchange(QStringLiteral("{\"type\":\"heartbeat\"}")); }
    QWebSocket& socket() { return m_socket; }

private:
    QWebSocket m_socket;
    QList<QJsonObject> m_received;
};

} // namespace

class TestCoordinatorSession final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void heartbeatsKeepNodeOnlineUntilItFallsSilent();
    void badFramesAreAnsweredAndTheSessionStays();
    void oversizeFrameClosedWith1009();
    void aSecondSessionReplacesTheFirst();
    void closedSocketIsOfflineAtOnce();
    void badTokensClosedWith1008();
    void floodClosedWith1008();
    void sessionRevokedByReadmissionIsClosed();
    void aNodeOlderThanTheProtocolIsToldToUpdate();
    void creditsUnknownNodeIs404();
    void creditReceiptsAreSignedChainedAndPaged();
    void sigtermClosesSessionsAndExitsZero();

private:
    Reply get(const QString& path) { return test::httpRequest(m_net, m_ssl, m_server->url() + path); }
    // challenge → signed admission → {node_id, session_token, ...}
    QJsonObject admit(const Identity& id) {
        return test::admitNode(m_net, m_ssl, m_server->url(), id).json();
    }
    SessionClient* open(const QByteArray& authorization) {
        m_clients.push_back(std::make_unique<SessionClient>(
            m_ssl, QUrl(QString(m_server->url()).replace(u"https://"_qs, u"wss://"_qs) + u"/v1/session"_qs),
            authorization));
        return m_clients.back().get();
    }
    int nodesOnline() {
        return get(u"/v1/status"_qs).json().value(u"nodes").toObject().value(u"online").toInt(-1);
    }
    QByteArray metrics() { return get(u"/metrics"_qs).body; }

    QTemporaryDir m_dir;
    QString m_runDir;
    std::unique_ptr<CoordinatorProcess> m_server;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
    std::vector<std::unique_ptr<SessionClient>> m_clients;
    QString m_creditedNode; // admitted by an earlier test; receives receipts
};

void TestCoordinatorSession::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_runDir = m_dir.filePath(u"run"_qs);
    m_server = std::make_unique<CoordinatorProcess>(QStringList{
        u"--data-dir"_qs, m_runDir, u"--listen"_qs, u"127.0.0.1:0"_qs, u"--model"_qs, u"tiny"_qs,
        u"--stages"_qs, u"2"_qs, u"--heartbeat-timeout-ms"_qs, QString::number(kHeartbeatTimeoutMs)});
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    QVERIFY(m_server->url().startsWith(u"https://127.0.0.1:"));
    const QList<QSslCertificate> certs = QSslCertificate::fromPath(m_runDir + u"/tls.crt"_qs, QSsl::Pem);
    QCOMPARE(certs.size(), 1);
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(certs);
}

void TestCoordinatorSession::cleanupTestCase() {
    m_clients.clear();
    m_server.reset();
}

void TestCoordinatorSession::heartbeatsKeepNodeOnlineUntilItFallsSilent() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    const QJsonObject admitted = admit(*id);
    const QString token = admitted.value(u"session_token").toString();
    QVERIFY2(!token.isEmpty(), QJsonDocument(admitted).toJson().constData());
    m_creditedNode = admitted.value(u"node_id").toString();

    SessionClient* node = open("Bearer " + token.toLatin1());
    QVERIFY(node->waitConnected());
    const qint64 before = QDateTime::currentMSecsSinceEpoch();
    const QJsonObject ack = node->heartbeat();
    QCOMPARE(ack.value(u"type").toString(), u"heartbeat_ack"_qs);
    QVERIFY(ack.value(u"server_time_ms").toInteger() >= before - 1000);
    QCOMPARE(nodesOnline(), 1);
    QVERIFY2(metrics().contains("\ntessera_sessions_connected 1\n"), metrics().constData());

    // Heartbeating for twice the timeout keeps it online and connected.
    for (int i = 0; i < 10; ++i) {
        QTest::qWait(kHeartbeatTimeoutMs / 5);
        QCOMPARE(node->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);
    }
    QCOMPARE(nodesOnline(), 1);

    // Silent: the coordinator closes the socket and the node is offline.
    QVERIFY(node->waitClosed(kHeartbeatTimeoutMs * 4));
    QCOMPARE(node->socket().closeCode(), QWebSocketProtocol::CloseCodeGoingAway);
    QCOMPARE(nodesOnline(), 0);
    const QByteArray m = metrics();
    QVERIFY2(m.contains("\ntessera_sessions_connected 0\n"), m.constData());
    QVERIFY(m.contains("tessera_session_events_total{event=\"timed_out\"} 1\n"));
}

void TestCoordinatorSession::badFramesAreAnsweredAndTheSessionStays() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    SessionClient* node = open("Bearer " + admit(*id).value(u"session_token").toString().toLatin1());
    QVERIFY(node->waitConnected());
    for (const char* frame :
         {"{not json", "[1,2]", "{\"type\":5}", "{\"type\":\"dance\"}", "", "\"heartbeat\""}) {
        const QJsonObject r = node->exchange(QString::fromLatin1(frame));
        QCOMPARE(r.value(u"type").toString(), u"error"_qs);
        QVERIFY2(!r.value(u"error").toString().isEmpty(), frame);
    }
    QCOMPARE(node->exchangeBinary("{\"type\":\"heartbeat\"}").value(u"type").toString(), u"error"_qs);
    QCOMPARE(node->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);
    QCOMPARE(node->socket().state(), QAbstractSocket::ConnectedState);
    node->socket().close();
    QVERIFY(node->waitClosed());
}

// Tried: a node admitted as 0.2.0 whose record then says 0.1.0 (what an upgraded coordinator finds
// of a node admitted by the old one) opens its session with its saved token: closed with 1008 and
// words that say to update, before any task is sent (its frames would be of another version).
void TestCoordinatorSession::aNodeOlderThanTheProtocolIsToldToUpdate() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    const int online = nodesOnline();
    const QJsonObject admitted = admit(*id);
    const QString connection = QStringLiteral("old-node");
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
        db.setDatabaseName(m_runDir + QStringLiteral("/coordinator.sqlite"));
        db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
        QVERIFY2(db.open(), qPrintable(db.lastError().text()));
        QSqlQuery q(db);
        QVERIFY(q.prepare(QStringLiteral("UPDATE nodes SET client_version = '0.1.0' WHERE node_id = ?")));
        q.addBindValue(admitted.value(u"node_id").toString());
        QVERIFY2(q.exec(), qPrintable(q.lastError().text()));
        QCOMPARE(q.numRowsAffected(), 1);
        db.close();
    }
    QSqlDatabase::removeDatabase(connection);
    SessionClient* node = open("Bearer " + admitted.value(u"session_token").toString().toLatin1());
    QVERIFY(node->waitClosed());
    QCOMPARE(node->socket().closeCode(), QWebSocketProtocol::CloseCodePolicyViolated);
    const QString reason = node->socket().closeReason();
    QVERIFY2(reason.contains(u"Tessera 0.1.0") && reason.contains(u"0.2.0") &&
                 reason.contains(u"update Tessera"),
             qPrintable(reason));
    // It never counted as online through its session (its admission's mark lapses with the timeout;
    // an earlier test's node may lapse meanwhile too, on a slow machine: not above, rather than equal).
    QTRY_VERIFY_WITH_TIMEOUT(nodesOnline() <= online, 3 * kHeartbeatTimeoutMs);
}

// Tried: a text message of 17 KiB (the limit is 16 KiB), then one of 64 KiB sent as many small
// frames: each is closed with 1009 naming the limit as its frames arrive, and the node is offline.
void TestCoordinatorSession::oversizeFrameClosedWith1009() {
    for (const int frameBytes : {0, 1024}) {
        Result<Identity> id = Identity::generate();
        QVERIFY(id);
        SessionClient* node = open("Bearer " + admit(*id).value(u"session_token").toString().toLatin1());
        QVERIFY(node->waitConnected());
        if (frameBytes > 0)
            node->socket().setOutgoingFrameSize(quint64(frameBytes));
        node->socket().sendTextMessage(QString(frameBytes > 0 ? 64 * 1024 : 17 * 1024, u'x'));
        QVERIFY(node->waitClosed());
        QCOMPARE(node->socket().closeCode(), QWebSocketProtocol::CloseCodeTooMuchData);
        QVERIFY2(node->socket().closeReason().contains(u"16384 bytes"),
                 qPrintable(node->socket().closeReason()));
        QTRY_COMPARE(nodesOnline(), 0);
    }
}

// Tried: one node opens a session, then the same token again, then ten more at once. Each new
// session replaces the one before: the replaced ones are closed with 1008 saying so, one socket is
// left live, the node stays online and the coordinator counts one session.
void TestCoordinatorSession::aSecondSessionReplacesTheFirst() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    const QByteArray authorization = "Bearer " + admit(*id).value(u"session_token").toString().toLatin1();
    SessionClient* first = open(authorization);
    QVERIFY(first->waitConnected());
    QCOMPARE(first->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);
    SessionClient* second = open(authorization);
    QVERIFY(second->waitConnected());
    QVERIFY(first->waitClosed());
    QCOMPARE(first->socket().closeCode(), QWebSocketProtocol::CloseCodePolicyViolated);
    QVERIFY2(first->socket().closeReason().contains(u"replaced"), qPrintable(first->socket().closeReason()));
    QCOMPARE(second->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);

    std::vector<SessionClient*> more;
    for (int i = 0; i < 10; ++i)
        more.push_back(open(authorization));
    QVERIFY(QTest::qWaitFor(
        [&] {
            int live = second->socket().state() == QAbstractSocket::ConnectedState ? 1 : 0;
            int settled = second->socket().state() == QAbstractSocket::UnconnectedState ? 1 : 0;
            for (SessionClient* c : more) {
                live += c->socket().state() == QAbstractSocket::ConnectedState;
                settled += c->socket().state() == QAbstractSocket::UnconnectedState;
            }
            return live == 1 && settled == 10;
        },
        15'000));
    QVERIFY(metrics().contains("\ntessera_sessions_connected 1\n"));
    QCOMPARE(nodesOnline(), 1);
    for (SessionClient* c : more)
        if (c->socket().state() == QAbstractSocket::ConnectedState)
            c->socket().close();
    QTRY_COMPARE(nodesOnline(), 0);
}

void TestCoordinatorSession::closedSocketIsOfflineAtOnce() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    SessionClient* node = open("Bearer " + admit(*id).value(u"session_token").toString().toLatin1());
    QVERIFY(node->waitConnected());
    QCOMPARE(node->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);
    QCOMPARE(nodesOnline(), 1);
    node->socket().close();
    QVERIFY(node->waitClosed());
    // Well before the heartbeat timeout.
    QTRY_COMPARE_WITH_TIMEOUT(nodesOnline(), 0, kHeartbeatTimeoutMs / 2);
}

void TestCoordinatorSession::badTokensClosedWith1008() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    const QString token = admit(*id).value(u"session_token").toString();
    QVERIFY(!token.isEmpty());
    QTRY_COMPARE(nodesOnline(), 0); // the admitted node never connects: offline after the timeout
    const QByteArray before = metrics();

    for (const QByteArray& authorization :
         {QByteArray("Bearer " + token.toLatin1() + "x"), QByteArray("Bearer "), QByteArray(),
          QByteArray("Basic " + token.toLatin1())}) {
        SessionClient* node = open(authorization);
        QVERIFY2(node->waitClosed(), authorization.constData());
        QCOMPARE(node->socket().closeCode(), QWebSocketProtocol::CloseCodePolicyViolated);
        QVERIFY(!node->socket().closeReason().isEmpty());
    }
    QCOMPARE(nodesOnline(), 0);
    QVERIFY(metrics().contains("tessera_session_events_total{event=\"rejected\"} 4\n"));
    QVERIFY(before.contains("\ntessera_sessions_connected 0\n"));
    QVERIFY(metrics().contains("\ntessera_sessions_connected 0\n"));
}

// A node that sends 200 heartbeats at once (a bug or a hostile client) is over its message
// allowance (5/s, bursts of 20): closed with 1008, offline, counted; the coordinator stays up.
void TestCoordinatorSession::floodClosedWith1008() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    SessionClient* node = open("Bearer " + admit(*id).value(u"session_token").toString().toLatin1());
    QVERIFY(node->waitConnected());
    for (int i = 0; i < 200; ++i)
        node->socket().sendTextMessage(u"{\"type\":\"heartbeat\"}"_qs);
    QVERIFY(node->waitClosed());
    QCOMPARE(node->socket().closeCode(), QWebSocketProtocol::CloseCodePolicyViolated);
    QVERIFY2(node->socket().closeReason().contains(u"messages per second"),
             qPrintable(node->socket().closeReason()));
    QTRY_COMPARE(nodesOnline(), 0);
    const QByteArray m = metrics();
    QVERIFY2(m.contains("tessera_session_events_total{event=\"rate_limited\"} 1\n"),
             m.mid(m.indexOf("tessera_session_events_total{"), 300).constData());
}

// The same node admitted again (say, after a restart) gets a new token and the old one is
// revoked: when the new session opens, the old socket is closed with 1008 (replaced), while the new
// session keeps the node online.
void TestCoordinatorSession::sessionRevokedByReadmissionIsClosed() {
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    SessionClient* old = open("Bearer " + admit(*id).value(u"session_token").toString().toLatin1());
    QVERIFY(old->waitConnected());
    QCOMPARE(old->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);
    SessionClient* renewed = open("Bearer " + admit(*id).value(u"session_token").toString().toLatin1());
    QVERIFY(renewed->waitConnected());
    QCOMPARE(renewed->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);

    // The new session replaces the old one at once (one session per node); where a heartbeat of the
    // old one finds its token revoked first (a loaded machine), the reason says "replaced" too.
    QVERIFY(old->waitClosed(kHeartbeatTimeoutMs));
    QCOMPARE(old->socket().closeCode(), QWebSocketProtocol::CloseCodePolicyViolated);
    QVERIFY2(old->socket().closeReason().contains(u"replaced"), qPrintable(old->socket().closeReason()));
    QCOMPARE(renewed->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);
    QCOMPARE(nodesOnline(), 1);
    renewed->socket().close();
    QVERIFY(renewed->waitClosed());
    QTRY_COMPARE(nodesOnline(), 0);
}

void TestCoordinatorSession::creditsUnknownNodeIs404() {
    QCOMPARE(get(u"/v1/nodes/%1/credits"_qs.arg(QString(64, u'a'))).status, 404);
    QCOMPARE(get(u"/v1/nodes/nope/credits"_qs).status, 404);
}

void TestCoordinatorSession::creditReceiptsAreSignedChainedAndPaged() {
    QVERIFY(!m_creditedNode.isEmpty());
    const QString path = u"/v1/nodes/%1/credits"_qs.arg(m_creditedNode);
    Reply r = get(path);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.json().value(u"receipts").toArray().size(), 0);
    QCOMPARE(r.json().value(u"total_micro_credits").toInteger(), 0);

    // Granting comes with the data plane: the receipts go straight into the coordinator's SQLite
    // database (WAL lets a second connection write), signed with its own key.
    {
        Result<Identity> key = Identity::load(m_runDir + u"/coordinator.key"_qs);
        QVERIFY2(key, key ? "" : key.message().c_str());
        Result<std::unique_ptr<Database>> db = Database::open(QString(), m_runDir);
        QVERIFY2(db, db ? "" : db.message().c_str());
        CreditLedger ledger(**db);
        const CreditLedger::Signer sign = [&](const QByteArray& payload) -> Result<QByteArray> {
            return key->sign(payload);
        };
        for (qint64 micro : {1'500'000, 250'000, 3}) {
            Result<CreditReceipt> added = ledger.append(m_creditedNode, 1'700'000'000'000 + micro,
                                                        micro * protocol::kFlopPerMicroCredit, micro, sign);
            QVERIFY2(added, added ? "" : added.message().c_str());
        }
    }

    r = get(path);
    QCOMPARE(r.status, 200);
    const QJsonObject o = r.json();
    QCOMPARE(o.value(u"node_id").toString(), m_creditedNode);
    QCOMPARE(o.value(u"total_micro_credits").toInteger(), 1'750'003);
    QCOMPARE(o.value(u"total_credits").toDouble(), 1.750003);
    QCOMPARE(o.value(u"last_seq").toInteger(), 3);
    const QString keyText = get(u"/v1/info"_qs).json().value(u"coordinator_key").toString();
    QCOMPARE(o.value(u"coordinator_key").toString(), keyText);
    const QByteArray coordinatorKey = *Identity::fromBase64Url(keyText, Identity::kPublicKeySize);

    const QJsonArray receipts = o.value(u"receipts").toArray();
    QCOMPARE(receipts.size(), 3);
    QString prev = kGenesisHash;
    for (qsizetype i = 0; i < receipts.size(); ++i) {
        const QJsonObject j = receipts.at(i).toObject();
        CreditReceipt c;
        c.nodeId = m_creditedNode;
        c.seq = j.value(u"seq").toInteger();
        c.issuedAtMs = j.value(u"issued_at").toInteger();
        c.flop = j.value(u"flop").toInteger();
        c.microCredits = j.value(u"micro_credits").toInteger();
        c.prevHash = j.value(u"prev_hash").toString();
        QCOMPARE(c.seq, i + 1);
        QCOMPARE(c.prevHash, prev);
        QCOMPARE(j.value(u"hash").toString(), c.computeHash());
        Result<QByteArray> signature =
            Identity::fromBase64Url(j.value(u"signature").toString(), Identity::kSignatureSize);
        QVERIFY(signature);
        QVERIFY(Identity::verify(coordinatorKey, c.payload(), *signature));
        c.microCredits += 1; // a receipt altered by anyone else no longer verifies
        QVERIFY(!Identity::verify(coordinatorKey, c.payload(), *signature));
        prev = j.value(u"hash").toString();
    }

    r = get(path + u"?after=2"_qs);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.json().value(u"receipts").toArray().size(), 1);
    QCOMPARE(r.json().value(u"receipts").toArray().at(0).toObject().value(u"seq").toInteger(), 3);
    QCOMPARE(r.json().value(u"total_micro_credits").toInteger(), 1'750'003); // totals are not paged
    QCOMPARE(get(path + u"?after=3"_qs).json().value(u"receipts").toArray().size(), 0);
    QCOMPARE(get(path + u"?after=-1"_qs).status, 400);
    QCOMPARE(get(path + u"?after=x"_qs).status, 400);
}

void TestCoordinatorSession::sigtermClosesSessionsAndExitsZero() {
    // A heartbeat timeout far longer than the test: only the clean stop can mark the node
    // offline before the restart looks.
    const QStringList args{
        u"--data-dir"_qs, m_runDir, u"--listen"_qs, u"127.0.0.1:0"_qs, u"--heartbeat-timeout-ms"_qs,
        u"600000"_qs};
    m_clients.clear();
    QCOMPARE(m_server->terminate(5'000), 0);
    m_server = std::make_unique<CoordinatorProcess>(args);
    QVERIFY2(m_server->waitReady(), m_server->err().constData());

    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    SessionClient* node = open("Bearer " + admit(*id).value(u"session_token").toString().toLatin1());
    QVERIFY(node->waitConnected());
    QCOMPARE(node->heartbeat().value(u"type").toString(), u"heartbeat_ack"_qs);
    QCOMPARE(nodesOnline(), 1);

    QElapsedTimer timer;
    timer.start();
    QCOMPARE(m_server->terminate(5'000), 0);
    QVERIFY(timer.elapsed() < 5'000);
    QVERIFY(node->waitClosed(1'000));
    QCOMPARE(node->socket().closeCode(), QWebSocketProtocol::CloseCodeGoingAway);
    QVERIFY2(m_server->out().contains("shutting down"), m_server->out().constData());
    // A clean stop checkpoints SQLite's WAL into the database file.
    QVERIFY(!QFile::exists(m_runDir + u"/coordinator.sqlite-wal"_qs));

    m_server = std::make_unique<CoordinatorProcess>(args);
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    QCOMPARE(nodesOnline(), 0);
}

QTEST_GUILESS_MAIN(TestCoordinatorSession)
#include "test_coordinator_session.moc"
