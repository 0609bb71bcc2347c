// SPDX-License-Identifier: Apache-2.0
// Identity: Ed25519 keys that sign and verify, agree with the real `openssl` CLI, and live in a
// key file no other user can read.
#include "common/Identity.h"

#include <QCryptographicHash>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "TestSupport.h"

#include <sys/stat.h>

using namespace tessera;
using test::fileMode;
using test::readFile;
using test::writeFile;

namespace {

test::ProcessRun runMerged(const QString& program, const QStringList& arguments) {
    return test::runProcess(program, arguments, {QProcessEnvironment::systemEnvironment(), true, 60'000});
}

bool chmod(const QString& path, mode_t mode) {
    return ::chmod(QFile::encodeName(path).constData(), mode) == 0;
}

Identity make() {
    Result<Identity> id = Identity::generate();
    if (!id)
        qFatal("generate: %s", id.message().c_str());
    return std::move(id).value();
}

} // namespace

class TestIdentity : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_openssl;

    QString path(const QString& name) const { return m_dir.filePath(name); }

    void requireOpenssl() {
        if (m_openssl.isEmpty())
            QSKIP("the openssl command-line tool is not installed");
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_openssl = QStandardPaths::findExecutable(QStringLiteral("openssl"));
    }

    void signThenVerify() {
        const Identity id = make();
        const QByteArray message = QByteArrayLiteral("admission nonce 1234");
        const QByteArray signature = id.sign(message);
        QCOMPARE(signature.size(), Identity::kSignatureSize);
        QCOMPARE(id.publicKey().size(), Identity::kPublicKeySize);
        QVERIFY(Identity::verify(id.publicKey(), message, signature));
        QVERIFY(Identity::verify(id.publicKey(), {}, id.sign({})));
        // Ed25519 is deterministic: the same message, the same signature.
        QCOMPARE(id.sign(message), signature);
    }

    void verifyRejects_data() {
        QTest::addColumn<QByteArray>("key");
        QTest::addColumn<QByteArray>("message");
        QTest::addColumn<QByteArray>("signature");

        const Identity id = make();
        const QByteArray message = QByteArrayLiteral("credit receipt #7");
        const QByteArray signature = id.sign(message);
        const QByteArray key = id.publicKey();
        auto flip = [](QByteArray data, qsizetype at) {
            data[at] = char(data[at] ^ 0x01);
            return data;
        };

        QTest::newRow("tampered message") << key << QByteArrayLiteral("credit receipt #8") << signature;
        QTest::newRow("tampered signature R") << key << message << flip(signature, 3);
        QTest::newRow("tampered signature S") << key << message << flip(signature, 40);
        QTest::newRow("wrong key") << make().publicKey() << message << signature;
        QTest::newRow("short key") << key.left(31) << message << signature;
        QTest::newRow("long key") << key + '\0' << message << signature;
        QTest::newRow("empty key") << QByteArray() << message << signature;
        QTest::newRow("short signature") << key << message << signature.left(63);
        QTest::newRow("long signature") << key << message << signature + '\0';
        QTest::newRow("empty signature") << key << message << QByteArray();
        QTest::newRow("zero key") << QByteArray(32, '\0') << message << signature;
        QTest::newRow("zero signature") << key << message << QByteArray(64, '\0');
    }

    void verifyRejects() {
        QFETCH(QByteArray, key);
        QFETCH(QByteArray, message);
        QFETCH(QByteArray, signature);
        QVERIFY(!Identity::verify(key, message, signature));
    }

    void nodeIdIsSha256OfPublicKey() {
        const Identity id = make();
        static const QRegularExpression hex64(QStringLiteral("^[0-9a-f]{64}$"));
        QVERIFY2(hex64.match(id.nodeId()).hasMatch(), qPrintable(id.nodeId()));
        QCOMPARE(id.nodeId(),
                 QString::fromLatin1(
                     QCryptographicHash::hash(id.publicKey(), QCryptographicHash::Sha256).toHex()));
        QCOMPARE(Identity::nodeIdOf(id.publicKey()), id.nodeId());
        QVERIFY(make().nodeId() != id.nodeId());
    }

    void copiesShareTheKey() {
        const Identity id = make();
        Identity copy = id;
        QCOMPARE(copy.nodeId(), id.nodeId());
        QVERIFY(Identity::verify(id.publicKey(), "m", copy.sign("m")));
        Identity other = make();
        other = copy;
        QCOMPARE(other.nodeId(), id.nodeId());
        const Identity moved = std::move(copy);
        QVERIFY(Identity::verify(id.publicKey(), "m", moved.sign("m")));
    }

    void loadOrCreateKeepsOneKey() {
        // The data directory does not exist yet on a first run.
        const QString file = path(QStringLiteral("first-run/data/node.key"));
        // A permissive umask must not widen the file.
        const mode_t oldMask = ::umask(0);
        Result<Identity> first = Identity::loadOrCreate(file);
        ::umask(oldMask);
        QVERIFY2(first.ok(), first.ok() ? "" : first.message().c_str());
        QCOMPARE(fileMode(file), 0600);
        QVERIFY(readFile(file).startsWith("-----BEGIN PRIVATE KEY-----\n"));
        // No temporary file is left behind.
        QCOMPARE(QDir(path(QStringLiteral("first-run/data"))).entryList(QDir::Files | QDir::Hidden),
                 QStringList{QStringLiteral("node.key")});

        Result<Identity> second = Identity::loadOrCreate(file);
        QVERIFY2(second.ok(), second.ok() ? "" : second.message().c_str());
        QCOMPARE(second->nodeId(), first->nodeId());
        QCOMPARE(Identity::load(file)->nodeId(), first->nodeId());
        QVERIFY(Identity::verify(first->publicKey(), "x", second->sign("x")));
        QCOMPARE(fileMode(file), 0600);
    }

    void refusesKeyOthersCanRead() {
        const QString file = path(QStringLiteral("shared.key"));
        QVERIFY(Identity::loadOrCreate(file).ok());
        QVERIFY(chmod(file, 0644));
        for (const Result<Identity>& r : {Identity::load(file), Identity::loadOrCreate(file)}) {
            QVERIFY(!r.ok());
            QVERIFY2(QString::fromStdString(r.message()).contains(QStringLiteral("chmod 600 ") + file),
                     r.message().c_str());
            QVERIFY2(QString::fromStdString(r.message()).contains(QStringLiteral("0644")),
                     r.message().c_str());
        }
        QVERIFY(chmod(file, 0640));
        QVERIFY(!Identity::load(file).ok());
        QVERIFY(chmod(file, 0600));
        QVERIFY(Identity::load(file).ok());
    }

    void refusesWhatIsNotAnEd25519Key_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("reason");
        QTest::newRow("garbage") << QByteArrayLiteral("not a key\n")
                                 << QStringLiteral("not a PEM private key");
        QTest::newRow("empty") << QByteArray() << QStringLiteral("not a PEM private key");
        QTest::newRow("public key") << make().publicKeyPem() << QStringLiteral("not a PEM private key");
        QTest::newRow("truncated")
            << QByteArrayLiteral(
                   "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n")
            << QStringLiteral("not a PEM private key");
    }

    void refusesWhatIsNotAnEd25519Key() {
        QFETCH(QByteArray, content);
        QFETCH(QString, reason);
        const QString file =
            path(QStringLiteral("bad-%1.key").arg(QString::fromLatin1(QTest::currentDataTag())));
        QVERIFY(writeFile(file, content));
        QVERIFY(chmod(file, 0600));
        Result<Identity> r = Identity::load(file);
        QVERIFY(!r.ok());
        QVERIFY2(QString::fromStdString(r.message()).contains(reason), r.message().c_str());
        QVERIFY2(QString::fromStdString(r.message()).contains(file), r.message().c_str());
        // loadOrCreate never replaces a file it cannot read: it may be someone's only key.
        QVERIFY(!Identity::loadOrCreate(file).ok());
        QCOMPARE(readFile(file), content);
    }

    void refusesAnRsaKey() {
        requireOpenssl();
        const QString file = path(QStringLiteral("rsa.key"));
        const test::ProcessRun made =
            runMerged(m_openssl, {QStringLiteral("genpkey"), QStringLiteral("-algorithm"),
                                  QStringLiteral("RSA"), QStringLiteral("-out"), file});
        QVERIFY2(made.exitCode == 0, made.out.constData());
        QVERIFY(chmod(file, 0600));
        Result<Identity> r = Identity::load(file);
        QVERIFY(!r.ok());
        QVERIFY2(QString::fromStdString(r.message()).contains(QStringLiteral("RSA")), r.message().c_str());
        QVERIFY2(QString::fromStdString(r.message()).contains(QStringLiteral("Ed25519")),
                 r.message().c_str());
    }

    void loadsAKeyMadeByOpenssl() {
        requireOpenssl();
        const QString file = path(QStringLiteral("openssl-made.key"));
        QVERIFY(runMerged(m_openssl, {QStringLiteral("genpkey"), QStringLiteral("-algorithm"),
                                      QStringLiteral("ED25519"), QStringLiteral("-out"), file})
                    .exitCode == 0);
        QVERIFY(chmod(file, 0600));
        Result<Identity> id = Identity::load(file);
        QVERIFY2(id.ok(), id.ok() ? "" : id.message().c_str());
        const test::ProcessRun pub = runMerged(
            m_openssl, {QStringLiteral("pkey"), QStringLiteral("-in"), file, QStringLiteral("-pubout")});
        QCOMPARE(pub.exitCode, 0);
        QCOMPARE(id->publicKeyPem(), pub.out);
    }

    void opensslVerifiesOurSignature() {
        requireOpenssl();
        const Identity id = make();
        const QByteArray message = QByteArrayLiteral("manifest stage 3 version 12\n");
        const QString pub = path(QStringLiteral("ours.pub")), msg = path(QStringLiteral("ours.msg")),
                      sig = path(QStringLiteral("ours.sig")), bad = path(QStringLiteral("ours.bad"));
        QVERIFY(writeFile(pub, id.publicKeyPem()));
        QVERIFY(writeFile(msg, message));
        QVERIFY(writeFile(sig, id.sign(message)));
        QByteArray tampered = id.sign(message);
        tampered[10] = char(tampered[10] ^ 0x80);
        QVERIFY(writeFile(bad, tampered));

        auto verify = [&](const QString& signature) {
            return runMerged(m_openssl,
                             {QStringLiteral("pkeyutl"), QStringLiteral("-verify"), QStringLiteral("-pubin"),
                              QStringLiteral("-inkey"), pub, QStringLiteral("-rawin"), QStringLiteral("-in"),
                              msg, QStringLiteral("-sigfile"), signature});
        };
        const test::ProcessRun good = verify(sig);
        QVERIFY2(good.exitCode == 0 && good.out.contains("Signature Verified Successfully"),
                 good.out.constData());
        QVERIFY(verify(bad).exitCode != 0);
    }

    void weVerifyOpensslSignature() {
        requireOpenssl();
        const QString key = path(QStringLiteral("cli.key")), msg = path(QStringLiteral("cli.msg")),
                      sig = path(QStringLiteral("cli.sig"));
        Result<Identity> id = Identity::loadOrCreate(key);
        QVERIFY(id.ok());
        const QByteArray message = QByteArrayLiteral("signed by the openssl CLI with our key file");
        QVERIFY(writeFile(msg, message));
        const test::ProcessRun signedRun = runMerged(
            m_openssl, {QStringLiteral("pkeyutl"), QStringLiteral("-sign"), QStringLiteral("-inkey"), key,
                        QStringLiteral("-rawin"), QStringLiteral("-in"), msg, QStringLiteral("-out"), sig});
        QVERIFY2(signedRun.exitCode == 0, signedRun.out.constData());
        const QByteArray signature = readFile(sig);
        QCOMPARE(signature.size(), Identity::kSignatureSize);
        QVERIFY(Identity::verify(id->publicKey(), message, signature));
        QCOMPARE(signature, id->sign(message));
        QVERIFY(!Identity::verify(id->publicKey(), message + '!', signature));
    }

    void base64Url() {
        const Identity id = make();
        const QString text = id.publicKeyBase64();
        QCOMPARE(text.size(), 43);
        QVERIFY(!text.contains(u'=') && !text.contains(u'+') && !text.contains(u'/'));
        Result<QByteArray> back = Identity::fromBase64Url(text, Identity::kPublicKeySize);
        QVERIFY(back.ok());
        QCOMPARE(*back, id.publicKey());
        const QString sig = Identity::toBase64Url(id.sign("m"));
        QCOMPARE(Identity::fromBase64Url(sig, Identity::kSignatureSize).valueOr({}), id.sign("m"));
    }

    void base64UrlIsStrict_data() {
        QTest::addColumn<QString>("text");
        const QString good = Identity::toBase64Url(QByteArray(32, '\xfb'));
        QTest::newRow("padded") << good + u'=';
        QTest::newRow("standard alphabet") << QString(good).replace(u'-', u'+').replace(u'_', u'/');
        QTest::newRow("space") << u' ' + good;
        QTest::newRow("too short") << good.left(42);
        QTest::newRow("too long") << good + QStringLiteral("AA");
        QTest::newRow("stray low bits") << good.left(42) + u't'; // 's' is canonical
        QTest::newRow("empty") << QString();
        QTest::newRow("non-ascii") << good.left(42) + QChar(0xe9);
    }

    void base64UrlIsStrict() {
        QFETCH(QString, text);
        QVERIFY(!Identity::fromBase64Url(text, 32).ok());
    }
};

QTEST_GUILESS_MAIN(TestIdentity)
#include "test_identity.moc"
