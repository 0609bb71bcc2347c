// SPDX-License-Identifier: Apache-2.0
// SwarmStatusClient against the real tessera-coordinator over TLS with the certificate it made
// itself: the status arrives with its stages and steps; another certificate, or none, is a TLS
// failure; a wrong path is an HTTP error; a stopped coordinator is named as unreachable. A small
// canned server in the test stands in for what the real one never sends: HTML and a status of
// 2 MiB.
#include "CoordinatorProcess.h"
#include "common/TlsCertificate.h"
#include "manager/CoordinatorCheck.h"
#include "manager/SwarmStatusClient.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using namespace tessera;
using namespace tessera::manager;
using namespace Qt::StringLiterals;

namespace {

// Answers every HTTP request on loopback with the same bytes, then closes the connection.
class CannedServer final {
public:
    explicit CannedServer(QByteArray response)
        : m_response(std::move(response)) {
        m_server.listen(QHostAddress::LocalHost);
        QObject::connect(&m_server, &QTcpServer::newConnection, &m_server, [this] {
            while (QTcpSocket* socket = m_server.nextPendingConnection()) {
                auto request = std::make_shared<QByteArray>();
                QObject::connect(socket, &QTcpSocket::readyRead, socket, [this, socket, request] {
                    *request += socket->readAll();
                    if (!request->contains("\r\n\r\n"))
                        return;
                    socket->write(m_response);
                    socket->disconnectFromHost();
                });
                QObject::connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
            }
        });
    }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(m_server.serverPort()); }

private:
    QByteArray m_response;
    QTcpServer m_server;
};

QByteArray httpResponse(const QByteArray& contentType, const QByteArray& body) {
    return "HTTP/1.1 200 OK\r\nContent-Type: " + contentType +
           "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// The one error a refresh ends in (an empty string when it succeeded or timed out instead).
QString failureOf(SwarmStatusClient& client) {
    QSignalSpy failed(&client, &SwarmStatusClient::failed);
    client.refresh();
    if (failed.isEmpty() && !failed.wait(30'000))
        return {};
    return failed.first().first().toString();
}

} // namespace

class TestSwarmStatusClient final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void statusOverVerifiedTls();
    void otherCertificateIsATlsFailure();
    void aCertificateSetAfterARefusalIsUsedAtOnce();
    void theCoordinatorCheckSaysWhatIsWrong();
    void unreadableCertificateFile();
    void wrongPathIsAnHttpError();
    void notJsonIsRefused();
    void oversizedStatusIsRefused();
    void stoppedCoordinatorIsUnreachable();

private:
    QTemporaryDir m_dir;
    QString m_ca;
    QString m_otherCa;
    std::unique_ptr<CoordinatorProcess> m_coordinator;
};

void TestSwarmStatusClient::initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo(coordinatorProgram()).isExecutable(), qPrintable(coordinatorProgram()));
    const QString run = m_dir.filePath(QStringLiteral("run"));
    m_coordinator = std::make_unique<CoordinatorProcess>(QStringList{
        QStringLiteral("--data-dir"), run, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
        QStringLiteral("--model"), QStringLiteral("tiny"), QStringLiteral("--stages"), QStringLiteral("2")});
    QVERIFY2(m_coordinator->waitReady(), m_coordinator->err().constData());
    QVERIFY(m_coordinator->url().startsWith(u"https://127.0.0.1:"));
    m_ca = run + QStringLiteral("/tls.crt");
    QVERIFY(QFileInfo::exists(m_ca));

    // A certificate for the same names from another issuer, as a mistaken file would be.
    m_otherCa = m_dir.filePath(QStringLiteral("other.crt"));
    Result<TlsCertificate> other =
        TlsCertificate::loadOrCreate(m_otherCa, m_dir.filePath(QStringLiteral("other.key")));
    QVERIFY2(other, other ? "" : other.message().c_str());
}

void TestSwarmStatusClient::cleanupTestCase() {
    m_coordinator.reset();
}

void TestSwarmStatusClient::statusOverVerifiedTls() {
    SwarmStatusClient client;
    client.setCoordinator(m_coordinator->url() + u'/', m_ca);
    QSignalSpy changed(&client, &SwarmStatusClient::statusChanged);
    QSignalSpy failed(&client, &SwarmStatusClient::failed);
    client.refresh();
    client.refresh(); // already in flight: not asked twice
    QVERIFY(changed.wait(30'000));
    QTest::qWait(200);
    QCOMPARE(changed.size(), 1);
    QCOMPARE(failed.size(), 0);

    const QJsonObject status = changed.first().first().toJsonObject();
    QCOMPARE(status, client.lastStatus());
    QVERIFY(client.lastError().isEmpty());
    QCOMPARE(status.value(u"name").toString(), QStringLiteral("tessera-coordinator"));
    QCOMPARE(status.value(u"model").toString(), QStringLiteral("tiny"));
    QCOMPARE(status.value(u"nodes").toObject().value(u"online").toInt(-1), 0);
    const QJsonArray stages = status.value(u"stages").toArray();
    QCOMPARE(stages.size(), 2);
    for (const QJsonValue& stage : stages) {
        QVERIFY(stage.toObject().contains(u"step"));
        QCOMPARE(stage.toObject().value(u"version").toInt(), 1);
    }

    // And again, once the first has finished.
    client.refresh();
    QVERIFY(changed.wait(30'000));
    QCOMPARE(changed.size(), 2);
}

void TestSwarmStatusClient::otherCertificateIsATlsFailure() {
    for (const QString& ca : {m_otherCa, QString()}) { // another issuer; only the system's
        SwarmStatusClient client;
        client.setCoordinator(m_coordinator->url(), ca);
        const QString error = failureOf(client);
        QVERIFY2(error.startsWith(QStringLiteral("the TLS connection to the coordinator at ") +
                                  m_coordinator->url()),
                 qPrintable(error));
        QVERIFY2(error.contains(u"certificate"), qPrintable(error));
        QCOMPARE(client.lastError(), error);
        QVERIFY(client.lastStatus().isEmpty());
    }
}

void TestSwarmStatusClient::aCertificateSetAfterARefusalIsUsedAtOnce() {
    // The app started without the coordinator's certificate; the user sets it in Settings. The
    // next refresh must trust it, not reuse the connection made without it (found by a user: the
    // swarm panel kept its certificate error until the app was restarted).
    SwarmStatusClient client;
    client.setCoordinator(m_coordinator->url(), QString());
    QVERIFY(failureOf(client).contains(u"certificate"));
    client.setCoordinator(m_coordinator->url(), m_ca);
    QSignalSpy changed(&client, &SwarmStatusClient::statusChanged);
    client.refresh();
    QVERIFY2(changed.wait(30'000), qPrintable(client.lastError()));
    QCOMPARE(changed.first().first().toJsonObject().value(u"name").toString(),
             QStringLiteral("tessera-coordinator"));
}

void TestSwarmStatusClient::theCoordinatorCheckSaysWhatIsWrong() {
    // The first-run wizard's check (CoordinatorCheck) against the same real coordinator.
    CoordinatorCheck check;
    const auto run = [&check](const QString& url, const QString& ca) {
        QSignalSpy finished(&check, &CoordinatorCheck::finished);
        check.check(url, ca);
        if (finished.isEmpty() && !finished.wait(30'000))
            return CoordinatorCheck::Answer{};
        return finished.first().first().value<CoordinatorCheck::Answer>();
    };
    using Outcome = CoordinatorCheck::Outcome;
    const QString served = CoordinatorCheck::fingerprint(QSslCertificate::fromPath(m_ca).value(0));
    QCOMPARE(served.size(), 95); // 32 bytes, "AB:CD:…"

    CoordinatorCheck::Answer a = run(m_coordinator->url(), m_ca);
    QCOMPARE(a.outcome, Outcome::Ok);
    QCOMPARE(a.model, u"tiny"_s);
    // Nothing trusted yet: the certificate offered, with its fingerprint.
    a = run(m_coordinator->url(), QString());
    QCOMPARE(a.outcome, Outcome::Untrusted);
    QCOMPARE(CoordinatorCheck::fingerprint(a.certificate), served);
    QVERIFY2(a.message.contains(u"no authority this computer trusts"), qPrintable(a.message));
    // Another certificate trusted for it: offered too, but with a warning.
    a = run(m_coordinator->url(), m_otherCa);
    QCOMPARE(a.outcome, Outcome::Untrusted);
    QCOMPARE(CoordinatorCheck::fingerprint(a.certificate), served);
    QVERIFY2(a.message.contains(u"different certificate from the one this computer trusts"),
             qPrintable(a.message));
    // Pinned, then trusted.
    const Result<QString> pinned =
        CoordinatorCheck::pin(a.certificate, m_dir.filePath(u"trusted"_s), m_coordinator->url());
    QVERIFY2(pinned, pinned ? "" : pinned.message().c_str());
    QCOMPARE(QFileInfo(*pinned).permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther),
             QFileDevice::Permissions());
    QCOMPARE(run(m_coordinator->url(), *pinned).outcome, Outcome::Ok);
    // Nothing listening; not an address; something that is not a coordinator.
    a = run(u"https://127.0.0.1:1"_s, QString());
    QCOMPARE(a.outcome, Outcome::Unreachable);
    QVERIFY2(a.message.startsWith(u"Nothing answers at 127.0.0.1:1"), qPrintable(a.message));
    QCOMPARE(run(u"coordinator.example.org"_s, QString()).outcome, Outcome::BadAddress);
    CannedServer other(httpResponse("application/json", R"({"name":"something-else"})"));
    QCOMPARE(run(other.url(), QString()).outcome, Outcome::NotACoordinator);
}

void TestSwarmStatusClient::unreadableCertificateFile() {
    SwarmStatusClient client;
    const QString missing = m_dir.filePath(QStringLiteral("no-such.crt"));
    client.setCoordinator(m_coordinator->url(), missing);
    const QString error = failureOf(client);
    QCOMPARE(error, QStringLiteral("no PEM certificate in the coordinator's certificate file ") + missing);
}

void TestSwarmStatusClient::wrongPathIsAnHttpError() {
    SwarmStatusClient client;
    client.setCoordinator(m_coordinator->url() + QStringLiteral("/nowhere"), m_ca);
    const QString error = failureOf(client);
    QVERIFY2(error.contains(u"answered HTTP 404 to /v1/status"), qPrintable(error));
}

void TestSwarmStatusClient::notJsonIsRefused() {
    for (const QByteArray& response :
         {httpResponse("text/html", "<html><body>Welcome to nginx!</body></html>"),
          httpResponse("application/json", "[1, 2, 3]")}) {
        CannedServer server(response);
        SwarmStatusClient client;
        client.setCoordinator(server.url(), {});
        const QString error = failureOf(client);
        QVERIFY2(error.contains(u"sent a status that is not a JSON object"), qPrintable(error));
        QVERIFY(client.lastStatus().isEmpty());
    }
}

void TestSwarmStatusClient::oversizedStatusIsRefused() {
    // No Content-Length: the client cannot know the size before it has read too much.
    const QByteArray body = "{\"padding\": \"" + QByteArray(2 << 20, 'x') + "\"}";
    CannedServer server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
                        body);
    SwarmStatusClient client;
    client.setCoordinator(server.url(), {});
    const QString error = failureOf(client);
    QVERIFY2(error.contains(u"sent a status larger than 1 MiB"), qPrintable(error));
}

void TestSwarmStatusClient::stoppedCoordinatorIsUnreachable() {
    SwarmStatusClient client;
    client.setCoordinator(m_coordinator->url(), m_ca);
    QSignalSpy changed(&client, &SwarmStatusClient::statusChanged);
    client.refresh();
    QVERIFY(changed.wait(30'000));

    m_coordinator->stop();
    const QString error = failureOf(client);
    QCOMPARE(error, QStringLiteral("cannot reach the coordinator at %1: the connection was refused (is the "
                                   "coordinator running?)")
                        .arg(m_coordinator->url()));
    // The dashboard keeps showing the last status it had, with the error beside it.
    QCOMPARE(client.lastStatus().value(u"stages").toArray().size(), 2);
    QCOMPARE(client.lastError(), error);
}

QTEST_GUILESS_MAIN(TestSwarmStatusClient)
#include "test_swarm_status_client.moc"
