// SPDX-License-Identifier: Apache-2.0
// TlsCertificate: the coordinator's self-signed certificate is made once, agrees with the real
// `openssl` CLI, and carries a real TLS handshake on loopback for a client that pins it.
#include "common/TlsCertificate.h"

#include <QDateTime>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QSslConfiguration>
#include <QSslServer>
#include <QSslSocket>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "TestSupport.h"

#include <algorithm>

#include <sys/stat.h>

using namespace tessera;
using test::fileMode;
using test::readFile;
using test::writeFile;

namespace {

test::ProcessRun runMerged(const QString& program, const QStringList& arguments) {
    return test::runProcess(program, arguments, {QProcessEnvironment::systemEnvironment(), true, 60'000});
}

QString messageOf(const Result<TlsCertificate>& r) {
    return r.ok() ? QString() : QString::fromStdString(r.message());
}

// A loopback TLS server with `tls` that echoes every line it receives.
class EchoServer final {
public:
    explicit EchoServer(const TlsCertificate& tls) {
        QSslConfiguration config = QSslConfiguration::defaultConfiguration();
        config.setLocalCertificateChain(tls.certificateChain());
        config.setPrivateKey(tls.privateKey());
        config.setPeerVerifyMode(QSslSocket::VerifyNone);
        m_server.setSslConfiguration(config);
        QObject::connect(&m_server, &QTcpServer::pendingConnectionAvailable, &m_server, [this] {
            while (QTcpSocket* socket = m_server.nextPendingConnection()) {
                QObject::connect(socket, &QIODevice::readyRead, socket, [socket] {
                    while (socket->canReadLine())
                        socket->write(socket->readLine());
                });
            }
        });
    }
    bool listen() { return m_server.listen(QHostAddress::LocalHost, 0); }
    quint16 port() const { return m_server.serverPort(); }

private:
    QSslServer m_server;
};

} // namespace

class TestTlsCertificate : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_openssl;
    QString m_cert;
    QString m_key;

    QString path(const QString& name) const { return m_dir.filePath(name); }

    void requireOpenssl() {
        if (m_openssl.isEmpty())
            QSKIP("the openssl command-line tool is not installed");
    }

    TlsCertificate coordinator() {
        Result<TlsCertificate> tls = TlsCertificate::load(m_cert, m_key);
        if (!tls)
            qFatal("load: %s", tls.message().c_str());
        return std::move(tls).value();
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        if (!QSslSocket::supportsSsl())
            QSKIP("Qt has no TLS backend here");
        m_openssl = QStandardPaths::findExecutable(QStringLiteral("openssl"));
        m_cert = path(QStringLiteral("coordinator/tls.crt"));
        m_key = path(QStringLiteral("coordinator/tls.key"));
    }

    void loadOrCreateMakesBothFilesOnce() {
        const mode_t oldMask = ::umask(0);
        Result<TlsCertificate> first = TlsCertificate::loadOrCreate(
            m_cert, m_key, {QStringLiteral("localhost"), QStringLiteral("127.0.0.1"), QStringLiteral("::1")});
        ::umask(oldMask);
        QVERIFY2(first.ok(), qPrintable(messageOf(first)));
        QVERIFY(QFile::exists(m_cert));
        QCOMPARE(fileMode(m_key), 0600);
        QVERIFY(!first->certificate().isNull());
        QVERIFY(!first->privateKey().isNull());
        QCOMPARE(first->privateKey().algorithm(), QSsl::Ec);

        Result<TlsCertificate> second =
            TlsCertificate::loadOrCreate(m_cert, m_key, {QStringLiteral("other")});
        QVERIFY2(second.ok(), qPrintable(messageOf(second)));
        QCOMPARE(second->sha256Fingerprint(), first->sha256Fingerprint());
        QCOMPARE(second->privateKey(), first->privateKey());
    }

    void certificateContents() {
        const QSslCertificate cert = coordinator().certificate();
        const auto names = cert.subjectAlternativeNames();
        QVERIFY(names.values(QSsl::DnsEntry).contains(QStringLiteral("localhost")));
        QVERIFY(names.values(QSsl::IpAddressEntry).contains(QStringLiteral("127.0.0.1")));
        QVERIFY(names.values(QSsl::IpAddressEntry).contains(QStringLiteral("0:0:0:0:0:0:0:1")) ||
                names.values(QSsl::IpAddressEntry).contains(QStringLiteral("::1")));
        QVERIFY(cert.isSelfSigned());
        const QDateTime now = QDateTime::currentDateTimeUtc();
        // Valid from a day back: a node whose clock stepped back an hour still accepts it.
        QVERIFY(cert.effectiveDate() <= now.addSecs(-23 * 3600));
        QVERIFY(cert.expiryDate() > now.addYears(9));
        QVERIFY(cert.expiryDate() < now.addYears(11));
    }

    void fingerprintMatchesOpenssl() {
        requireOpenssl();
        const test::ProcessRun printed = runMerged(
            m_openssl, {QStringLiteral("x509"), QStringLiteral("-noout"), QStringLiteral("-fingerprint"),
                        QStringLiteral("-sha256"), QStringLiteral("-in"), m_cert});
        QCOMPARE(printed.exitCode, 0);
        // "sha256 Fingerprint=AB:CD:..."
        const QString expected = QString::fromLatin1(printed.out.trimmed()).section(u'=', 1);
        QCOMPARE(expected.size(), 32 * 3 - 1);
        QCOMPARE(coordinator().sha256Fingerprint(), expected);
    }

    void handshakeWithAClientThatPinsIt() {
        const TlsCertificate tls = coordinator();
        EchoServer server(tls);
        QVERIFY(server.listen());

        QSslSocket client;
        QSslConfiguration config = QSslConfiguration::defaultConfiguration();
        config.setCaCertificates({tls.certificate()});
        client.setSslConfiguration(config);
        QSignalSpy encrypted(&client, &QSslSocket::encrypted);
        QSignalSpy sslErrors(&client, &QSslSocket::sslErrors);
        client.connectToHostEncrypted(QStringLiteral("127.0.0.1"), server.port());
        QTRY_COMPARE_WITH_TIMEOUT(encrypted.count() + sslErrors.count(), 1, 10'000);
        QVERIFY2(sslErrors.isEmpty(),
                 sslErrors.isEmpty()
                     ? ""
                     : qPrintable(sslErrors.first().first().value<QList<QSslError>>().first().errorString()));
        QCOMPARE(client.peerCertificate(), tls.certificate());

        client.write("hello, coordinator\n");
        QTRY_VERIFY_WITH_TIMEOUT(client.canReadLine(), 10'000);
        QCOMPARE(client.readLine(), QByteArrayLiteral("hello, coordinator\n"));
    }

    void aClientThatDoesNotTrustItRefuses() {
        const TlsCertificate tls = coordinator();
        EchoServer server(tls);
        QVERIFY(server.listen());

        QSslSocket client; // the system's CAs only
        QSignalSpy encrypted(&client, &QSslSocket::encrypted);
        QSignalSpy sslErrors(&client, &QSslSocket::sslErrors);
        client.connectToHostEncrypted(QStringLiteral("127.0.0.1"), server.port());
        QTRY_COMPARE_WITH_TIMEOUT(sslErrors.count(), 1, 10'000);
        const auto errors = sslErrors.first().first().value<QList<QSslError>>();
        QVERIFY(std::any_of(errors.begin(), errors.end(), [](const QSslError& e) {
            return e.error() == QSslError::SelfSignedCertificate;
        }));
        QTRY_VERIFY_WITH_TIMEOUT(client.state() == QAbstractSocket::UnconnectedState, 10'000);
        QCOMPARE(encrypted.count(), 0);
    }

    void loadsAnOperatorsRsaCertificate() {
        requireOpenssl();
        const QString cert = path(QStringLiteral("operator.crt")), key = path(QStringLiteral("operator.key"));
        const test::ProcessRun made = runMerged(
            m_openssl, {QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"),
                        QStringLiteral("rsa:2048"), QStringLiteral("-nodes"), QStringLiteral("-keyout"), key,
                        QStringLiteral("-out"), cert, QStringLiteral("-days"), QStringLiteral("2"),
                        QStringLiteral("-subj"), QStringLiteral("/CN=coordinator.example"),
                        QStringLiteral("-addext"), QStringLiteral("subjectAltName=DNS:coordinator.example")});
        QVERIFY2(made.exitCode == 0, made.out.constData());
        QVERIFY(QFile::setPermissions(key, QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        Result<TlsCertificate> tls = TlsCertificate::load(cert, key);
        QVERIFY2(tls.ok(), qPrintable(messageOf(tls)));
        QCOMPARE(tls->privateKey().algorithm(), QSsl::Rsa);
        QCOMPARE(tls->certificate().subjectInfo(QSslCertificate::CommonName),
                 QStringList{QStringLiteral("coordinator.example")});
    }

    void mismatchedPairIsRefused() {
        const QString cert = path(QStringLiteral("other/tls.crt")),
                      key = path(QStringLiteral("other/tls.key"));
        QVERIFY(TlsCertificate::loadOrCreate(cert, key).ok());
        Result<TlsCertificate> mixed = TlsCertificate::load(m_cert, key);
        QVERIFY(!mixed.ok());
        QVERIFY2(messageOf(mixed).contains(QStringLiteral("does not match")), qPrintable(messageOf(mixed)));
        QVERIFY(messageOf(mixed).contains(key) && messageOf(mixed).contains(m_cert));
    }

    void clearErrors() {
        const QString garbage = path(QStringLiteral("garbage.pem"));
        QVERIFY(writeFile(garbage, "not a certificate\n"));
        QVERIFY(QFile::setPermissions(garbage, QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        const QString missing = path(QStringLiteral("missing.crt"));

        QVERIFY(messageOf(TlsCertificate::load(missing, m_key)).contains(QStringLiteral("cannot open")));
        QVERIFY(messageOf(TlsCertificate::load(garbage, m_key))
                    .contains(QStringLiteral("not a PEM certificate")));
        QVERIFY(messageOf(TlsCertificate::load(m_cert, garbage))
                    .contains(QStringLiteral("not an unencrypted PEM")));
        // A key file other users can read is refused, as for identities.
        const QString open = path(QStringLiteral("open.key"));
        QVERIFY(QFile::copy(m_key, open));
        QVERIFY(::chmod(QFile::encodeName(open).constData(), 0644) == 0);
        QVERIFY(messageOf(TlsCertificate::load(m_cert, open)).contains(QStringLiteral("chmod 600")));

        // Half a pair is never completed behind the operator's back.
        const QString lone = path(QStringLiteral("lone.crt"));
        QVERIFY(QFile::copy(m_cert, lone));
        const QString half = messageOf(TlsCertificate::loadOrCreate(lone, path(QStringLiteral("lone.key"))));
        QVERIFY2(half.contains(QStringLiteral("found ")) && half.contains(QStringLiteral("lone.key")),
                 qPrintable(half));
        QVERIFY(!QFile::exists(path(QStringLiteral("lone.key"))));

        const QString badName = messageOf(
            TlsCertificate::loadOrCreate(path(QStringLiteral("n.crt")), path(QStringLiteral("n.key")),
                                         {QStringLiteral("a,DNS:evil.example")}));
        QVERIFY2(badName.contains(QStringLiteral("neither a DNS name nor an IP address")),
                 qPrintable(badName));
        QVERIFY(!QFile::exists(path(QStringLiteral("n.key"))));
    }
};

QTEST_GUILESS_MAIN(TestTlsCertificate)
#include "test_tls_certificate.moc"
