// SPDX-License-Identifier: Apache-2.0
// The real tessera-coordinator process on loopback, over HTTPS with the certificate it makes
// itself (and over plain HTTP with --insecure-loopback), driven by Qt's network classes and by
// curl: info, challenge and signed admission, replay, bad JSON, signed manifests, ranged shard
// downloads and If-Range (a shard replaced on disk gets a new ETag), status and metrics, a restart
// that resumes the run, --dataset, and the refusals at startup.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "base/ShardManifest.h"
#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"
#include "protocol/ManifestSignature.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cstdio>
#include <memory>

#include <sys/stat.h>

using namespace tessera;

namespace {

using Reply = test::HttpReply;

QByteArray sha256File(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return h.result().toHex();
}

// The ETag a shard is served with: the database's "sha256-<hex>" plus the file's size,
// modification time in ns and inode (hex), so it changes whenever the file on disk does.
QByteArray servedEtag(const QString& path, const QByteArray& recordedSha256) {
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return {};
    const quint64 mtimeNs = quint64(st.st_mtim.tv_sec) * 1'000'000'000u + quint64(st.st_mtim.tv_nsec);
    return "\"sha256-" + recordedSha256 + '-' + QByteArray::number(quint64(st.st_size), 16) + '-' +
           QByteArray::number(mtimeNs, 16) + '-' + QByteArray::number(quint64(st.st_ino), 16) + '"';
}

} // namespace

class TestCoordinatorProcess final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();

    void infoOverVerifiedTls();
    void admissionAndReplay();
    void badRequestsName400();
    void manifestIsSignedAndMatchesDownload();
    void rangedDownloadWithCurl();
    void ifRangeCurrentEtagIs206StaleIsWholeFile();
    void replacedShardStaleIfRangeGetsWholeNewFile();
    void shardPathTricksAre404();
    void statusMetricsAndPage();
    void restartResumesTheRun();
    void insecureLoopbackServesPlainHttp();

private:
    Reply send(const QString& base, const QByteArray& method, const QString& path,
               const QByteArray& body = {}) {
        return test::httpRequest(m_net, m_ssl, base + path, method, body);
    }
    Reply get(const QString& path) { return send(m_server->url(), "GET", path); }
    Reply post(const QString& path, const QJsonObject& body) {
        return send(m_server->url(), "POST", path, QJsonDocument(body).toJson(QJsonDocument::Compact));
    }
    // challenge → signed admission; the request body is returned for replays.
    Reply admit(const QString& base, const Identity& id, QJsonObject* request = nullptr) {
        return test::admitNode(m_net, m_ssl, base, id, request);
    }
    QStringList args(const QString& dataDir, const QStringList& extra = {}) const {
        return QStringList{QStringLiteral("--data-dir"), dataDir, QStringLiteral("--listen"),
                           QStringLiteral("127.0.0.1:0")} +
               extra;
    }

    QTemporaryDir m_dir;
    QString m_runDir;
    QString m_curl;
    std::unique_ptr<CoordinatorProcess> m_server;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
};

void TestCoordinatorProcess::initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo(coordinatorProgram()).isExecutable(), qPrintable(coordinatorProgram()));
    m_curl = QStandardPaths::findExecutable(QStringLiteral("curl"));
    m_runDir = m_dir.filePath(QStringLiteral("run"));
    m_server = std::make_unique<CoordinatorProcess>(
        args(m_runDir, {QStringLiteral("--model"), QStringLiteral("tiny"), QStringLiteral("--stages"),
                        QStringLiteral("2")}));
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    QVERIFY(m_server->url().startsWith(u"https://127.0.0.1:"));
    QVERIFY(m_server->out().contains("created the run of model 'tiny'"));

    // The client trusts exactly the certificate the coordinator made, checked by its fingerprint.
    const QList<QSslCertificate> certs =
        QSslCertificate::fromPath(m_runDir + QStringLiteral("/tls.crt"), QSsl::Pem);
    QCOMPARE(certs.size(), 1);
    const QString fingerprint =
        QString::fromLatin1(certs.first().digest(QCryptographicHash::Sha256).toHex(':').toUpper());
    QCOMPARE(m_server->printed("TLS SHA-256 fingerprint"), fingerprint);
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(certs);
}

void TestCoordinatorProcess::cleanupTestCase() {
    m_server.reset();
}

void TestCoordinatorProcess::infoOverVerifiedTls() {
    const Reply r = get(QStringLiteral("/v1/info"));
    QCOMPARE(r.status, 200);
    const QJsonObject info = r.json();
    QCOMPARE(info.value(u"name").toString(), QStringLiteral("tessera-coordinator"));
    QCOMPARE(info.value(u"stages").toInt(), 2);
    QCOMPARE(info.value(u"model").toObject().value(u"name").toString(), QStringLiteral("tiny"));
    QCOMPARE(info.value(u"model").toObject().value(u"stages").toInt(), 2);
    QCOMPARE(info.value(u"coordinator_key").toString(), m_server->printed("coordinator key"));
    QCOMPARE(info.value(u"min_client_version").toString(), QStringLiteral("0.2.0"));
}

void TestCoordinatorProcess::admissionAndReplay() {
    Result<Identity> id = Identity::generate();
    QVERIFY2(id, id ? "" : id.message().c_str());
    QJsonObject request;
    const Reply r = admit(m_server->url(), *id, &request);
    QVERIFY2(r.status == 200, r.body.constData());
    const QJsonObject o = r.json();
    QCOMPARE(o.value(u"node_id").toString(), id->nodeId());
    QVERIFY(!o.value(u"session_token").toString().isEmpty());
    const int stage = o.value(u"stage").toInt(-1);
    QVERIFY(stage == 0 || stage == 1);
    QCOMPARE(o.value(u"manifest").toObject().value(u"stage").toInt(), stage);

    // The same signed request again: its nonce is spent.
    const Reply replay =
        send(m_server->url(), "POST", QStringLiteral("/v1/admission"), QJsonDocument(request).toJson());
    QCOMPARE(replay.status, 401);
    QVERIFY2(replay.error().startsWith(u"nonce:"), qPrintable(replay.error()));

    // A second node goes to the other, emptier stage.
    Result<Identity> other = Identity::generate();
    QVERIFY(other);
    const Reply second = admit(m_server->url(), *other);
    QCOMPARE(second.status, 200);
    QCOMPARE(second.json().value(u"stage").toInt(), 1 - stage);
}

void TestCoordinatorProcess::badRequestsName400() {
    const QString base = m_server->url();
    Reply r = send(base, "POST", QStringLiteral("/v1/admission"), "{not json");
    QCOMPARE(r.status, 400);
    QVERIFY2(r.error().startsWith(u"body:"), qPrintable(r.error()));
    r = send(base, "POST", QStringLiteral("/v1/admission/challenge"), "[1,2]");
    QCOMPARE(r.status, 400);
    r = post(QStringLiteral("/v1/admission/challenge"), QJsonObject{{QStringLiteral("node_key"), 5}});
    QCOMPARE(r.status, 400);
    QVERIFY2(r.error().startsWith(u"node_key:"), qPrintable(r.error()));
    r = post(QStringLiteral("/v1/admission/challenge"),
             QJsonObject{{QStringLiteral("node_key"), QStringLiteral("abc")}});
    QCOMPARE(r.status, 400);

    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    QJsonObject request =
        protocol::makeAdmissionRequest(id.value(), Identity::toBase64Url(QByteArray(32, 'x')),
                                       test::testHardware(), test::testBench(), QStringLiteral("0.2.0"));
    request.remove(QStringLiteral("hardware"));
    r = post(QStringLiteral("/v1/admission"), request);
    QCOMPARE(r.status, 400);
    QVERIFY2(r.error().startsWith(u"hardware"), qPrintable(r.error()));
}

void TestCoordinatorProcess::manifestIsSignedAndMatchesDownload() {
    const QByteArray key =
        *Identity::fromBase64Url(m_server->printed("coordinator key"), Identity::kPublicKeySize);
    for (int stage = 0; stage < 2; ++stage) {
        const Reply r = get(QStringLiteral("/v1/shards/%1/manifest").arg(stage));
        QCOMPARE(r.status, 200);
        Result<gpu::ShardManifest> m = gpu::ShardManifest::fromJson(r.body.toStdString());
        QVERIFY2(m, m ? "" : m.message().c_str());
        QCOMPARE(m->stage, stage);
        QVERIFY(protocol::manifestSignatureValid(*m, key));
        gpu::ShardManifest tampered = *m;
        tampered.fileSize += 1;
        QVERIFY(!protocol::manifestSignatureValid(tampered, key));

        const QString path = QStringLiteral("/v1/shards/%1/%2/%3")
                                 .arg(stage)
                                 .arg(m->version)
                                 .arg(QString::fromStdString(m->file));
        const Reply file = get(path);
        QCOMPARE(file.status, 200);
        QCOMPARE(quint64(file.body.size()), m->fileSize);
        QCOMPARE(QCryptographicHash::hash(file.body, QCryptographicHash::Sha256).toHex().toStdString(),
                 m->sha256);
        const QString onDisk = m_runDir + QStringLiteral("/shards/") + QString::fromStdString(m->file);
        QVERIFY(file.headers.value("etag").startsWith(
            QByteArray("\"sha256-" + QByteArray::fromStdString(m->sha256) + '-')));
        QCOMPARE(file.headers.value("etag"), servedEtag(onDisk, QByteArray::fromStdString(m->sha256)));
        // And the downloaded bytes pass the node's own check.
        const QString saved = m_dir.filePath(QString::fromStdString(m->file));
        QFile out(saved);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(file.body);
        out.close();
        const Status verified = m->verifyFile(saved.toStdString());
        QVERIFY2(verified, verified ? "" : verified.message().c_str());
    }
    QCOMPARE(get(QStringLiteral("/v1/shards/2/manifest")).status, 404);
    QCOMPARE(get(QStringLiteral("/v1/shards/x/manifest")).status, 404);
}

void TestCoordinatorProcess::rangedDownloadWithCurl() {
    if (m_curl.isEmpty())
        QSKIP("the curl binary is not installed");
    const QString file = m_runDir + QStringLiteral("/shards/stage-0-v1.safetensors");
    const QString out = m_dir.filePath(QStringLiteral("curl-range.bin"));
    QProcess curl;
    curl.start(m_curl,
               {QStringLiteral("-sS"), QStringLiteral("--cacert"), m_runDir + QStringLiteral("/tls.crt"),
                QStringLiteral("-r"), QStringLiteral("1000-5095"), QStringLiteral("-o"), out,
                QStringLiteral("-w"), QStringLiteral("%{http_code}"),
                m_server->url() + QStringLiteral("/v1/shards/0/1/stage-0-v1.safetensors")});
    QVERIFY(curl.waitForFinished(30'000));
    QVERIFY2(curl.exitCode() == 0, curl.readAllStandardError().constData());
    QCOMPARE(curl.readAllStandardOutput(), QByteArrayLiteral("206"));
    QFile original(file);
    QVERIFY(original.open(QIODevice::ReadOnly));
    original.seek(1000);
    QFile got(out);
    QVERIFY(got.open(QIODevice::ReadOnly));
    QCOMPARE(got.readAll(), original.read(4096));
}

// A node resuming a download sends the ETag it started with: the same shard continues (206), a
// shard replaced meanwhile (any other ETag) comes whole (200), so stale and new bytes never mix.
void TestCoordinatorProcess::ifRangeCurrentEtagIs206StaleIsWholeFile() {
    const QString path = QStringLiteral("/v1/shards/0/1/stage-0-v1.safetensors");
    const QString file = m_runDir + QStringLiteral("/shards/stage-0-v1.safetensors");
    QFile original(file);
    QVERIFY(original.open(QIODevice::ReadOnly));
    const QByteArray whole = original.readAll();
    const QByteArray etag = servedEtag(file, sha256File(file));
    const QByteArray stale = "\"sha256-" + QByteArray(64, '0') + '"';
    const QByteArray hashOnly = "\"sha256-" + sha256File(file) + '"'; // names bytes, not this file

    // Qt's client.
    auto ranged = [&](const QByteArray& ifRange) {
        QNetworkRequest request(QUrl(m_server->url() + path));
        request.setSslConfiguration(m_ssl);
        request.setRawHeader("Range", "bytes=100-199");
        request.setRawHeader("If-Range", ifRange);
        std::unique_ptr<QNetworkReply> reply(m_net.get(request));
        (void)QTest::qWaitFor([&] { return reply->isFinished(); }, 30'000);
        return Reply{
            reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), reply->readAll(), {}};
    };
    Reply r = ranged(etag);
    QCOMPARE(r.status, 206);
    QCOMPARE(r.body, whole.mid(100, 100));
    for (const QByteArray& other :
         QByteArrayList{stale, hashOnly, "W/" + etag, etag.mid(1, etag.size() - 2)}) {
        r = ranged(other);
        QVERIFY2(r.status == 200, other.constData());
        QCOMPARE(r.body.size(), whole.size());
        QVERIFY(r.body == whole);
    }

    // And curl, a client nobody here wrote.
    if (m_curl.isEmpty())
        QSKIP("the curl binary is not installed");
    auto curlRanged = [&](const QByteArray& ifRange, const QString& out) {
        QProcess curl;
        curl.start(m_curl,
                   {QStringLiteral("-sS"), QStringLiteral("--cacert"), m_runDir + QStringLiteral("/tls.crt"),
                    QStringLiteral("-r"), QStringLiteral("100-199"), QStringLiteral("-H"),
                    QStringLiteral("If-Range: ") + QString::fromLatin1(ifRange), QStringLiteral("-o"), out,
                    QStringLiteral("-w"), QStringLiteral("%{http_code}"), m_server->url() + path});
        if (!curl.waitForFinished(30'000) || curl.exitCode() != 0)
            qWarning("curl: %s", curl.readAllStandardError().constData());
        return curl.readAllStandardOutput();
    };
    const QString partOut = m_dir.filePath(QStringLiteral("if-range-part.bin"));
    const QString wholeOut = m_dir.filePath(QStringLiteral("if-range-whole.bin"));
    QCOMPARE(curlRanged(etag, partOut), QByteArrayLiteral("206"));
    QCOMPARE(curlRanged(stale, wholeOut), QByteArrayLiteral("200"));
    QFile part(partOut);
    QVERIFY(part.open(QIODevice::ReadOnly));
    QCOMPARE(part.readAll(), whole.mid(100, 100));
    QCOMPARE(sha256File(wholeOut), sha256File(file));
}

// An operator restores another file (or a checkpoint is rewritten) while the database still
// records the old hash: a node resuming with the ETag it started with must get the whole new
// file, never the old first half spliced to the new second half. Its own process and run dir,
// so the shared run's shards stay untouched.
void TestCoordinatorProcess::replacedShardStaleIfRangeGetsWholeNewFile() {
    const QString dir = m_dir.filePath(QStringLiteral("replaced"));
    CoordinatorProcess server(
        args(dir, {QStringLiteral("--insecure-loopback"), QStringLiteral("--stages"), QStringLiteral("2")}));
    QVERIFY2(server.waitReady(), server.err().constData());
    const Reply manifest = send(server.url(), "GET", QStringLiteral("/v1/shards/0/manifest"));
    QCOMPARE(manifest.status, 200);
    Result<gpu::ShardManifest> m = gpu::ShardManifest::fromJson(manifest.body.toStdString());
    QVERIFY2(m, m ? "" : m.message().c_str());
    const QString name = QString::fromStdString(m->file);
    const QString file = dir + QStringLiteral("/shards/") + name;
    const QString url = server.url() + QStringLiteral("/v1/shards/0/%1/%2").arg(m->version).arg(name);
    QFile original(file);
    QVERIFY(original.open(QIODevice::ReadOnly));
    const QByteArray old = original.readAll();
    original.close();
    QCOMPARE(quint64(old.size()), m->fileSize);
    const qint64 half = old.size() / 2;

    auto ranged = [&](const QByteArray& range, const QByteArray& ifRange) {
        QNetworkRequest request{QUrl(url)};
        request.setRawHeader("Range", range);
        if (!ifRange.isEmpty())
            request.setRawHeader("If-Range", ifRange);
        std::unique_ptr<QNetworkReply> reply(m_net.get(request));
        (void)QTest::qWaitFor([&] { return reply->isFinished(); }, 30'000);
        Reply r{reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), reply->readAll(), {}};
        r.headers.insert("etag", reply->rawHeader("ETag"));
        return r;
    };
    const Reply first = ranged("bytes=0-" + QByteArray::number(half - 1), {});
    QCOMPARE(first.status, 206);
    QVERIFY(first.body == old.left(half));
    const QByteArray oldEtag = first.headers.value("etag");
    const QByteArray recorded = QByteArray::fromStdString(m->sha256);
    QCOMPARE(oldEtag, servedEtag(file, recorded));

    // Other bytes of the same size, written beside it and renamed over it (an atomic replace).
    QByteArray fresh = old;
    for (char& c : fresh)
        c = char(c ^ 0x5a);
    const QString temp = file + QStringLiteral(".restore");
    {
        QFile t(temp);
        QVERIFY(t.open(QIODevice::WriteOnly) && t.write(fresh) == fresh.size());
    }
    QCOMPARE(std::rename(QFile::encodeName(temp).constData(), QFile::encodeName(file).constData()), 0);
    const QByteArray newEtag = servedEtag(file, recorded); // the database still names the old bytes
    QVERIFY(newEtag != oldEtag);

    const QByteArray from = "bytes=" + QByteArray::number(half) + '-';
    Reply rest = ranged(from, oldEtag);
    QCOMPARE(rest.status, 200);
    QCOMPARE(rest.body.size(), fresh.size());
    QVERIFY(rest.body == fresh);
    QCOMPARE(rest.headers.value("etag"), newEtag);
    rest = ranged(from, newEtag); // the new ETag resumes the new file
    QCOMPARE(rest.status, 206);
    QVERIFY(rest.body == fresh.mid(half));

    if (m_curl.isEmpty())
        QSKIP("the curl binary is not installed");
    const QString out = m_dir.filePath(QStringLiteral("replaced-rest.bin"));
    const QString head = m_dir.filePath(QStringLiteral("replaced-rest.head"));
    QProcess curl;
    curl.start(m_curl, {QStringLiteral("-sS"), QStringLiteral("-H"),
                        QStringLiteral("If-Range: ") + QString::fromLatin1(oldEtag), QStringLiteral("-r"),
                        QString::number(half) + u'-', QStringLiteral("-o"), out, QStringLiteral("-D"), head,
                        QStringLiteral("-w"), QStringLiteral("%{http_code}"), url});
    QVERIFY(curl.waitForFinished(30'000));
    QVERIFY2(curl.exitCode() == 0, curl.readAllStandardError().constData());
    QCOMPARE(curl.readAllStandardOutput(), QByteArrayLiteral("200"));
    QCOMPARE(sha256File(out), QCryptographicHash::hash(fresh, QCryptographicHash::Sha256).toHex());
    QFile headers(head);
    QVERIFY(headers.open(QIODevice::ReadOnly));
    const QByteArray block = headers.readAll().toLower();
    QVERIFY2(block.contains(QByteArray("\r\netag: " + newEtag.toLower() + "\r\n")), block.constData());
}

void TestCoordinatorProcess::shardPathTricksAre404() {
    for (const char* path :
         {"/v1/shards/0/1/stage-1-v1.safetensors", "/v1/shards/0/1/..%2Fcoordinator.key",
          "/v1/shards/0/1/%2E%2E%2F..%2Frun.json", "/v1/shards/0/2/stage-0-v1.safetensors",
          "/v1/shards/0/01/stage-0-v1.safetensors", "/v1/shards/9/1/stage-9-v1.safetensors",
          "/v1/shards/0/1/stage-0-v1.safetensors%00"}) {
        const Reply r = get(QString::fromLatin1(path));
        QVERIFY2(r.status == 404 || r.status == 400, path);
        QVERIFY2(!r.body.contains("BEGIN"), path);
    }
}

void TestCoordinatorProcess::statusMetricsAndPage() {
    Reply r = get(QStringLiteral("/v1/status"));
    QCOMPARE(r.status, 200);
    const QJsonObject status = r.json();
    QCOMPARE(status.value(u"nodes").toObject().value(u"online").toInt(), 2); // admitted above
    QCOMPARE(status.value(u"stages").toArray().size(), 2);
    QCOMPARE(status.value(u"stages").toArray().at(0).toObject().value(u"version").toInt(), 1);

    r = get(QStringLiteral("/metrics"));
    QCOMPARE(r.status, 200);
    QVERIFY(r.headers.value("content-type").startsWith("text/plain"));
    QVERIFY2(r.body.contains("\ntessera_nodes_online 2\n"), r.body.constData());
    QVERIFY(r.body.contains("tessera_admissions_total{outcome=\"admitted\"} 2\n"));
    QVERIFY(r.body.contains("tessera_admissions_total{outcome=\"unauthorized\"} 1\n"));
    QVERIFY(r.body.contains("tessera_http_requests_total{route=\"/v1/info\"} 1\n"));

    // The operator's page: static, its script and style from this origin only (the policy allows
    // nothing else); the figures come from the JSON routes (tests/core/coordinator/test_operator_page
    // renders it in Chromium).
    r = get(QStringLiteral("/"));
    QCOMPARE(r.status, 200);
    QVERIFY(r.headers.value("content-type").startsWith("text/html"));
    QVERIFY(r.headers.value("content-security-policy").contains("script-src 'self'"));
    QCOMPARE(r.headers.value("x-content-type-options"), QByteArray("nosniff"));
    QVERIFY(r.body.contains("<script src=\"/operator.js\" defer></script>"));
    QVERIFY(!r.body.contains("<script>")); // nothing inline
    r = get(QStringLiteral("/operator.js"));
    QCOMPARE(r.status, 200);
    QVERIFY(r.headers.value("content-type").startsWith("text/javascript"));
    QVERIFY(r.body.contains("/v1/leaderboard"));

    r = get(QStringLiteral("/v1/nodes"));
    QCOMPARE(r.status, 200);
    QCOMPARE(r.json().value(u"nodes_online").toInt(), 2);
    QCOMPARE(r.json().value(u"stages").toArray().size(), 2);
    r = get(QStringLiteral("/v1/leaderboard"));
    QCOMPARE(r.status, 200);
    QVERIFY(r.json().value(u"nodes").isArray());
    QVERIFY(r.json().value(u"teams").isArray());
    QVERIFY(get(QStringLiteral("/v1/loss")).json().value(u"points").isArray());
}

void TestCoordinatorProcess::restartResumesTheRun() {
    const QString key = m_server->printed("coordinator key");
    const QString shard = m_runDir + QStringLiteral("/shards/stage-1-v1.safetensors");
    const QByteArray hash = sha256File(shard);
    const QDateTime modified = QFileInfo(shard).lastModified();
    m_server.reset();

    m_server = std::make_unique<CoordinatorProcess>(args(m_runDir));
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    QVERIFY(m_server->out().contains("resumed the run of model 'tiny'"));
    QCOMPARE(m_server->printed("coordinator key"), key);
    QCOMPARE(sha256File(shard), hash);
    QCOMPARE(QFileInfo(shard).lastModified(), modified); // not rewritten
    QCOMPARE(get(QStringLiteral("/v1/info")).json().value(u"coordinator_key").toString(), key);
    QCOMPARE(get(QStringLiteral("/v1/status")).json().value(u"nodes").toObject().value(u"total").toInt(), 2);

    // The same run may be named again; another model may not (asked once the running coordinator
    // stopped: while it runs, the data dir's lock refuses any second one first).
    m_server.reset();
    CoordinatorProcess other(args(m_runDir, {QStringLiteral("--model"), QStringLiteral("tiny"),
                                             QStringLiteral("--stages"), QStringLiteral("3")}));
    QCOMPARE(other.waitExit(), 1);
    QVERIFY2(other.err().contains("A run's model never changes"), other.err().constData());
    m_server = std::make_unique<CoordinatorProcess>(args(m_runDir));
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
}

void TestCoordinatorProcess::insecureLoopbackServesPlainHttp() {
    CoordinatorProcess plain(
        args(m_dir.filePath(QStringLiteral("plain")), {QStringLiteral("--insecure-loopback")}));
    QVERIFY2(plain.waitReady(), plain.err().constData());
    QVERIFY(plain.url().startsWith(u"http://127.0.0.1:"));
    QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("plain/tls.crt"))));
    Reply r = send(plain.url(), "GET", QStringLiteral("/v1/info"));
    QCOMPARE(r.status, 200);
    QCOMPARE(r.json().value(u"stages").toInt(), 4); // tiny's own split
    Result<Identity> id = Identity::generate();
    QVERIFY(id);
    r = admit(plain.url(), *id);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.json().value(u"stage").toInt(), 0);
}

QTEST_GUILESS_MAIN(TestCoordinatorProcess)
#include "test_coordinator_process.moc"
