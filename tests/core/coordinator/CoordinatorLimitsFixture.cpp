// SPDX-License-Identifier: Apache-2.0
// CoordinatorLimitsFixture: the shared run, runs of their own, and curl.
#include "CoordinatorLimitsFixture.h"

namespace tessera::test {

void CoordinatorLimitsFixture::initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo(coordinatorProgram()).isExecutable(), qPrintable(coordinatorProgram()));
    m_curl = QStandardPaths::findExecutable(QStringLiteral("curl"));
    m_runDir = m_dir.filePath(QStringLiteral("shared"));
    m_server = start(QStringLiteral("shared"), {});
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    QVERIFY(m_server->url().startsWith(u"https://127.0.0.1:"));
    const QList<QSslCertificate> certs =
        QSslCertificate::fromPath(m_runDir + QStringLiteral("/tls.crt"), QSsl::Pem);
    QCOMPARE(certs.size(), 1);
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(certs);
}

void CoordinatorLimitsFixture::cleanupTestCase() {
    m_server.reset();
}

std::unique_ptr<CoordinatorProcess> CoordinatorLimitsFixture::start(const QString& name,
                                                                    const QStringList& extra) const {
    return std::make_unique<CoordinatorProcess>(
        QStringList{QStringLiteral("--data-dir"), m_dir.filePath(name), QStringLiteral("--listen"),
                    QStringLiteral("127.0.0.1:0"), QStringLiteral("--model"), QStringLiteral("tiny"),
                    QStringLiteral("--stages"), QStringLiteral("2")} +
        extra);
}

QString CoordinatorLimitsFixture::curl(const QStringList& arguments) {
    QProcess p;
    p.start(m_curl, QStringList{QStringLiteral("-sS"), QStringLiteral("--cacert"),
                                m_runDir + QStringLiteral("/tls.crt")} +
                        arguments);
    if (!p.waitForFinished(30'000) || p.exitCode() != 0)
        qWarning("curl: %s", p.readAllStandardError().constData());
    return QString::fromUtf8(p.readAllStandardOutput());
}

} // namespace tessera::test
