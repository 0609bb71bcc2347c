// SPDX-License-Identifier: Apache-2.0
// The real tessera-coordinator with the operator's own certificate: a CA and a server certificate
// made here by the openssl CLI; clients that trust only that CA connect (Qt and curl, by IP and by
// DNS name), clients that trust only the system CAs do not; bad key/certificate files are refused.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "TestSupport.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using Reply = tessera::test::HttpReply;

class TestCoordinatorOperatorTls final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void servesTheOperatorsCertificate();
    void clientTrustingOnlySystemCasRefuses();
    void badTlsFilesAreRefused_data();
    void badTlsFilesAreRefused();

private:
    QString path(const QString& name) const { return m_dir.filePath(name); }
    // Runs the openssl CLI in the temp dir; the failure's stderr goes to the test log.
    bool openssl(const QStringList& arguments);
    Reply get(QNetworkAccessManager& net, const QString& url, const QSslConfiguration& ssl) {
        return tessera::test::httpRequest(net, ssl, url);
    }
    QStringList args(const QString& dataDir, const QStringList& extra) const {
        return QStringList{QStringLiteral("--data-dir"), dataDir,
                           QStringLiteral("--listen"),   QStringLiteral("127.0.0.1:0"),
                           QStringLiteral("--stages"),   QStringLiteral("1")} +
               extra;
    }

    QTemporaryDir m_dir;
    QString m_openssl;
    QString m_curl;
    QString m_runDir;
    std::unique_ptr<CoordinatorProcess> m_server;
    QNetworkAccessManager m_net;
    QSslCertificate m_ca;
};

bool TestCoordinatorOperatorTls::openssl(const QStringList& arguments) {
    QProcess p;
    p.setWorkingDirectory(m_dir.path());
    p.start(m_openssl, arguments);
    if (!p.waitForFinished(30'000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        qWarning("openssl %s: %s", qPrintable(arguments.join(u' ')), p.readAllStandardError().constData());
        return false;
    }
    return true;
}

void TestCoordinatorOperatorTls::initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo(coordinatorProgram()).isExecutable(), qPrintable(coordinatorProgram()));
    m_openssl = QStandardPaths::findExecutable(QStringLiteral("openssl"));
    if (m_openssl.isEmpty())
        QSKIP("the openssl command-line tool is not installed (Debian: apt-get install openssl)");
    m_curl = QStandardPaths::findExecutable(QStringLiteral("curl"));

    // A CA as an operator's organisation would run one (EC P-256, which Qt's OpenSSL backend
    // serves), and a server certificate it signs for 127.0.0.1 and localhost.
    const QString p256 = QStringLiteral("ec_paramgen_curve:prime256v1");
    QVERIFY(openssl({QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"),
                     QStringLiteral("ec"), QStringLiteral("-pkeyopt"), p256, QStringLiteral("-nodes"),
                     QStringLiteral("-keyout"), QStringLiteral("ca.key"), QStringLiteral("-out"),
                     QStringLiteral("ca.crt"), QStringLiteral("-days"), QStringLiteral("2"),
                     QStringLiteral("-subj"), QStringLiteral("/CN=Tessera Test CA"),
                     QStringLiteral("-addext"), QStringLiteral("basicConstraints=critical,CA:TRUE"),
                     QStringLiteral("-addext"), QStringLiteral("keyUsage=critical,keyCertSign,cRLSign")}));
    for (const QString& key : {QStringLiteral("server.key"), QStringLiteral("other.key")})
        QVERIFY(openssl({QStringLiteral("genpkey"), QStringLiteral("-algorithm"), QStringLiteral("EC"),
                         QStringLiteral("-pkeyopt"), p256, QStringLiteral("-out"), key}));
    QVERIFY(openssl({QStringLiteral("req"), QStringLiteral("-new"), QStringLiteral("-key"),
                     QStringLiteral("server.key"), QStringLiteral("-subj"), QStringLiteral("/CN=localhost"),
                     QStringLiteral("-out"), QStringLiteral("server.csr")}));
    QVERIFY(tessera::test::writeFile(path(QStringLiteral("server.ext")),
                                     "subjectAltName = IP:127.0.0.1, DNS:localhost\n"
                                     "basicConstraints = CA:FALSE\n"
                                     "keyUsage = critical, digitalSignature\n"
                                     "extendedKeyUsage = serverAuth\n"));
    QVERIFY(openssl({QStringLiteral("x509"), QStringLiteral("-req"), QStringLiteral("-in"),
                     QStringLiteral("server.csr"), QStringLiteral("-CA"), QStringLiteral("ca.crt"),
                     QStringLiteral("-CAkey"), QStringLiteral("ca.key"), QStringLiteral("-set_serial"),
                     QStringLiteral("2"), QStringLiteral("-days"), QStringLiteral("2"),
                     QStringLiteral("-extfile"), QStringLiteral("server.ext"), QStringLiteral("-out"),
                     QStringLiteral("server.crt")}));
    // The coordinator refuses a key that other users may read, as it should.
    for (const QString& key : {QStringLiteral("server.key"), QStringLiteral("other.key")})
        QVERIFY(QFile::setPermissions(path(key), QFile::ReadOwner | QFile::WriteOwner));
    // And a copy that others may read, which must be refused.
    QVERIFY(QFile::copy(path(QStringLiteral("server.key")), path(QStringLiteral("loose.key"))));
    QVERIFY(QFile::setPermissions(path(QStringLiteral("loose.key")),
                                  QFile::ReadOwner | QFile::WriteOwner | QFile::ReadOther));
    const QList<QSslCertificate> ca = QSslCertificate::fromPath(path(QStringLiteral("ca.crt")), QSsl::Pem);
    QCOMPARE(ca.size(), 1);
    m_ca = ca.first();

    m_runDir = path(QStringLiteral("run"));
    m_server = std::make_unique<CoordinatorProcess>(
        args(m_runDir, {QStringLiteral("--tls-cert"), path(QStringLiteral("server.crt")),
                        QStringLiteral("--tls-key"), path(QStringLiteral("server.key"))}));
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    QVERIFY(m_server->url().startsWith(u"https://127.0.0.1:"));
}

void TestCoordinatorOperatorTls::cleanupTestCase() {
    m_server.reset();
}

void TestCoordinatorOperatorTls::servesTheOperatorsCertificate() {
    // The fingerprint printed is the operator's certificate's, as openssl itself computes it.
    QProcess fingerprint;
    fingerprint.start(m_openssl,
                      {QStringLiteral("x509"), QStringLiteral("-noout"), QStringLiteral("-fingerprint"),
                       QStringLiteral("-sha256"), QStringLiteral("-in"), path(QStringLiteral("server.crt"))});
    QVERIFY(fingerprint.waitForFinished(30'000));
    const QString line = QString::fromLatin1(fingerprint.readAllStandardOutput()).trimmed();
    QVERIFY2(line.contains(u'='), qPrintable(line));
    QCOMPARE(m_server->printed("TLS SHA-256 fingerprint"), line.section(u'=', 1).toUpper());
    QCOMPARE(m_server->printed("TLS certificate"), path(QStringLiteral("server.crt")));
    // Nothing self-signed was made beside it.
    QVERIFY(!QFileInfo::exists(m_runDir + QStringLiteral("/tls.crt")));
    QVERIFY(!QFileInfo::exists(m_runDir + QStringLiteral("/tls.key")));

    // A client that trusts only the operator's CA, by IP address and by DNS name (both SANs).
    QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
    ssl.setCaCertificates({m_ca});
    const QString port = m_server->url().section(u':', -1);
    const QStringList bases{m_server->url(), QStringLiteral("https://localhost:") + port};
    for (const QString& base : bases) {
        const Reply r = get(m_net, base + QStringLiteral("/v1/info"), ssl);
        QVERIFY2(r.status == 200, qPrintable(base));
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value(u"name").toString(),
                 QStringLiteral("tessera-coordinator"));
    }

    if (m_curl.isEmpty())
        QSKIP("the curl binary is not installed");
    for (const QString& base : bases) {
        const tessera::test::ProcessRun r =
            tessera::test::runProcess(m_curl,
                                      {QStringLiteral("-sS"), QStringLiteral("--cacert"),
                                       path(QStringLiteral("ca.crt")), base + QStringLiteral("/v1/info")},
                                      {QProcessEnvironment::systemEnvironment(), false, 30'000});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QCOMPARE(QJsonDocument::fromJson(r.out).object().value(u"name").toString(),
                 QStringLiteral("tessera-coordinator"));
    }
}

void TestCoordinatorOperatorTls::clientTrustingOnlySystemCasRefuses() {
    // Its own manager: QNetworkAccessManager reuses a kept-alive connection whatever TLS
    // configuration the next request carries, so m_net would skip the handshake under test.
    QNetworkAccessManager net;
    const Reply r =
        get(net, m_server->url() + QStringLiteral("/v1/info"), QSslConfiguration::defaultConfiguration());
    QCOMPARE(r.status, 0);
    QCOMPARE(r.networkError, QNetworkReply::SslHandshakeFailedError);

    if (m_curl.isEmpty())
        QSKIP("the curl binary is not installed");
    const tessera::test::ProcessRun curl =
        tessera::test::runProcess(m_curl,
                                  {QStringLiteral("-sS"), QStringLiteral("-o"), QStringLiteral("/dev/null"),
                                   m_server->url() + QStringLiteral("/v1/info")},
                                  {QProcessEnvironment::systemEnvironment(), false, 30'000});
    QCOMPARE(curl.exitCode, 60); // CURLE_PEER_FAILED_VERIFICATION
}

void TestCoordinatorOperatorTls::badTlsFilesAreRefused_data() {
    QTest::addColumn<QStringList>("tls");
    QTest::addColumn<QString>("message");
    const QString cert = path(QStringLiteral("server.crt"));
    const QString key = path(QStringLiteral("server.key"));
    const QString missing = path(QStringLiteral("missing.pem"));
    QTest::newRow("key of another certificate")
        << QStringList{QStringLiteral("--tls-cert"), cert, QStringLiteral("--tls-key"),
                       path(QStringLiteral("other.key"))}
        << QStringLiteral("does not match the certificate");
    QTest::newRow("missing certificate")
        << QStringList{QStringLiteral("--tls-cert"), missing, QStringLiteral("--tls-key"), key}
        << QString(QStringLiteral("cannot open certificate file ") + missing);
    QTest::newRow("missing key") << QStringList{QStringLiteral("--tls-cert"), cert,
                                                QStringLiteral("--tls-key"), missing}
                                 << QString(QStringLiteral("cannot open key file ") + missing);
    QTest::newRow("key others can read")
        << QStringList{QStringLiteral("--tls-cert"), cert, QStringLiteral("--tls-key"),
                       path(QStringLiteral("loose.key"))}
        << QStringLiteral("fix it with: chmod 600");
    QTest::newRow("only --tls-cert") << QStringList{QStringLiteral("--tls-cert"), cert}
                                     << QStringLiteral("--tls-cert and --tls-key go together");
    QTest::newRow("only --tls-key") << QStringList{QStringLiteral("--tls-key"), key}
                                    << QStringLiteral("--tls-cert and --tls-key go together");
}

void TestCoordinatorOperatorTls::badTlsFilesAreRefused() {
    QFETCH(QStringList, tls);
    QFETCH(QString, message);
    const QString dir =
        path(QStringLiteral("refused-") + QString::fromLatin1(QTest::currentDataTag()).replace(u' ', u'-'));
    CoordinatorProcess refused(args(dir, tls));
    QCOMPARE(refused.waitExit(), 1);
    QVERIFY2(refused.err().contains(message.toUtf8()), refused.err().constData());
    QVERIFY(!refused.out().contains("listening on"));
    // A refused start leaves nothing behind: no data dir, no key, no self-signed fallback.
    QVERIFY(!QFileInfo::exists(dir));
}

QTEST_GUILESS_MAIN(TestCoordinatorOperatorTls)
#include "test_coordinator_operator_tls.moc"
