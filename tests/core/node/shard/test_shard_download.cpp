// SPDX-License-Identifier: Apache-2.0
// ShardDownload and ShardStore against the real tessera-coordinator over HTTPS: a verified
// install, a coordinator killed mid-download (its network path cut) and restarted on another port (resumes
// from the verified prefix), a tampered shard refused by chunk, a stale record after the server's file
// changed, a truncated .part, the disk-space check, signed manifests, eviction.
#include "ShardDownloadTestSupport.h"

using namespace tessera;
using namespace tessera::node;
using gpu::ShardManifest;

class TestShardDownload final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void init();

    void signedManifestIsChecked();
    void fullDownloadIsVerifiedAndInstalled();
    void coordinatorKilledMidDownloadThenResumed();
    void cancelledDownloadResumesFromRecord();
    void staleRecordAfterServerFileChangedRestartsFromZero();
    void truncatedPartResumesFromWhatIsThere();
    void tamperedShardRefusedByChunkThenFetchedWhenRestored();
    void tooLittleDiskSpaceFailsBeforeAnyRequest();
    void plainHttpOffLoopbackRefused();
    void storeKeepsNewestAndEvictsTheRest();

private:
    QByteArray get(const QString& path);
    bool startCoordinator();
    ShardDownload* download(const ShardManifest& m, const ShardStore& store,
                            ShardDownloadOptions o = fastRetries(), const QString& base = {});
    Status run(ShardDownload& d, int timeoutMs = 30'000);
    // A throttled download cancelled once `fraction` of the file is verified; its record.
    std::optional<ShardProgress> interruptedAt(const ShardManifest& m, const ShardStore& store,
                                               double fraction);
    static ShardDownloadOptions fastRetries() {
        ShardDownloadOptions o;
        o.maxRetries = 2;
        o.firstRetryDelayMs = 20;
        o.maxRetryDelayMs = 50;
        return o;
    }
    QString serverFile() const {
        return m_runDir + QStringLiteral("/shards/") + QString::fromStdString(m_signed.file);
    }

    QTemporaryDir m_tmp;
    QString m_runDir;
    std::unique_ptr<KillableCoordinator> m_server;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
    QByteArray m_key;
    QByteArray m_manifestJson;
    ShardManifest m_signed; // the coordinator's, one 64 MiB chunk
    ShardManifest m_small;  // the same file hashed in 256 KiB chunks (unsigned)
    QByteArray m_serverBytes;
    std::unique_ptr<QTemporaryDir> m_node; // each test's <dataDir>/shards lives here
    QString m_shards;
};

bool TestShardDownload::startCoordinator() {
    m_server = std::make_unique<KillableCoordinator>(m_runDir);
    return m_server->waitReady();
}

void TestShardDownload::initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_runDir = m_tmp.filePath(QStringLiteral("run"));
    QVERIFY2(startCoordinator(), m_server->err().constData());
    QVERIFY(m_server->url().startsWith(u"https://127.0.0.1:"));
    const QList<QSslCertificate> certs = QSslCertificate::fromPath(m_runDir + QStringLiteral("/tls.crt"));
    QCOMPARE(certs.size(), 1);
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(certs);

    const QJsonObject info = QJsonDocument::fromJson(get(QStringLiteral("/v1/info"))).object();
    Result<QByteArray> key =
        Identity::fromBase64Url(info.value(u"coordinator_key").toString(), Identity::kPublicKeySize);
    QVERIFY2(key, key ? "" : key.message().c_str());
    m_key = *key;
    m_manifestJson = get(QStringLiteral("/v1/shards/%1/manifest").arg(kStage));
    Result<ShardManifest> m = protocol::parseSignedManifest(m_manifestJson, m_key);
    QVERIFY2(m, m ? "" : m.message().c_str());
    m_signed = *m;
    m_serverBytes = readAll(serverFile());
    QCOMPARE(quint64(m_serverBytes.size()), m_signed.fileSize);
    Result<ShardManifest> small =
        ShardManifest::build(QFile::encodeName(serverFile()).toStdString(), m_signed.modelConfigHash,
                             m_signed.stage, m_signed.version, m_signed.step, kSmallChunk);
    QVERIFY2(small, small ? "" : small.message().c_str());
    m_small = *small;
    QVERIFY2(m_small.chunks.size() >= 5, "the tiny shard should span several 256 KiB chunks");
    qInfo("shard %s: %llu bytes, %zu chunks of 256 KiB", m_signed.file.c_str(),
          (unsigned long long)m_signed.fileSize, m_small.chunks.size());
}

void TestShardDownload::cleanupTestCase() {
    m_server.reset();
}

void TestShardDownload::init() {
    if (!m_server->running())
        QVERIFY2(startCoordinator(), m_server->err().constData());
    m_node = std::make_unique<QTemporaryDir>();
    m_shards = m_node->filePath(QStringLiteral("shards"));
}

QByteArray TestShardDownload::get(const QString& path) {
    QNetworkRequest request(QUrl(m_server->url() + path));
    request.setSslConfiguration(m_ssl);
    std::unique_ptr<QNetworkReply> reply(m_net.get(request));
    if (!QTest::qWaitFor([&] { return reply->isFinished(); }, 30'000))
        return {};
    return reply->readAll();
}

ShardDownload* TestShardDownload::download(const ShardManifest& m, const ShardStore& store,
                                           ShardDownloadOptions o, const QString& base) {
    return new ShardDownload(&m_net, m_ssl, QUrl(base.isEmpty() ? m_server->url() : base), m, store, o, this);
}

Status TestShardDownload::run(ShardDownload& d, int timeoutMs) {
    std::optional<Status> result;
    const QMetaObject::Connection c =
        connect(&d, &ShardDownload::finished, this, [&](const Status& s) { result = s; });
    d.start();
    const bool done = QTest::qWaitFor([&] { return result.has_value(); }, timeoutMs);
    disconnect(c);
    return done ? *result : makeError("the download did not finish in time");
}

std::optional<ShardProgress> TestShardDownload::interruptedAt(const ShardManifest& m, const ShardStore& store,
                                                              double fraction) {
    ShardDownloadOptions o = fastRetries();
    o.maxBytesPerSecond = 600'000;
    std::unique_ptr<ShardDownload> d(download(m, store, o));
    bool finished = false;
    connect(d.get(), &ShardDownload::finished, this, [&] { finished = true; });
    d->start();
    const qint64 want = qint64(double(m.fileSize) * fraction);
    const bool reached =
        QTest::qWaitFor([&] { return finished || d->bytes() >= want + qint64(m.chunkSize); }, 30'000);
    if (!reached || finished)
        return std::nullopt;
    d->cancel();
    (void)QTest::qWaitFor([&] { return finished; }, 5'000);
    Result<ShardProgress> p = ShardProgress::load(store.progressPathFor(m));
    return p ? std::optional<ShardProgress>(*p) : std::nullopt;
}

void TestShardDownload::signedManifestIsChecked() {
    Result<ShardManifest> good = protocol::parseSignedManifest(m_manifestJson, m_key);
    QVERIFY2(good, good ? "" : good.message().c_str());

    ShardManifest tampered = *good; // the signature stays, the hash it covered changes
    tampered.sha256 = std::string(64, 'a');
    Result<ShardManifest> r =
        protocol::parseSignedManifest(QByteArray::fromStdString(tampered.toJson()), m_key);
    QVERIFY(!r);
    QVERIFY2(r.message().find("manifest signature invalid: not signed by the pinned coordinator key") !=
                 std::string::npos,
             r.message().c_str());

    ShardManifest unsigned_ = *good;
    unsigned_.signature.reset();
    r = protocol::parseSignedManifest(QByteArray::fromStdString(unsigned_.toJson()), m_key);
    QVERIFY(!r);
    QVERIFY2(r.message().find("manifest signature invalid") != std::string::npos, r.message().c_str());

    Result<Identity> other = Identity::generate();
    QVERIFY(other);
    ShardManifest foreign = *good;
    protocol::signManifest(foreign, *other);
    r = protocol::parseSignedManifest(QByteArray::fromStdString(foreign.toJson()), m_key);
    QVERIFY(!r);
    QVERIFY2(r.message().find("not signed by the pinned coordinator key") != std::string::npos,
             r.message().c_str());
    QVERIFY(protocol::parseSignedManifest(QByteArray::fromStdString(foreign.toJson()), other->publicKey()));

    r = protocol::parseSignedManifest(m_manifestJson.left(m_manifestJson.size() / 2), m_key);
    QVERIFY2(!r && r.message().find("shard manifest") != std::string::npos, r ? "" : r.message().c_str());
}

void TestShardDownload::fullDownloadIsVerifiedAndInstalled() {
    ShardStore store(m_shards);
    QVERIFY(store.ensureDir());
    const QString strayPart = m_shards + QStringLiteral("/stage-0-v0.safetensors.part");
    QVERIFY(writeAll(strayPart, "another stage's leftovers"));
    std::unique_ptr<ShardDownload> d(download(m_signed, store));
    QList<qint64> seen;
    connect(d.get(), &ShardDownload::progress, this, [&](qint64 bytes, qint64 total, double) {
        QCOMPARE(total, qint64(m_signed.fileSize));
        seen << bytes;
    });
    QElapsedTimer clock;
    clock.start();
    const Status s = run(*d);
    const qint64 ms = std::max<qint64>(1, clock.elapsed());
    QVERIFY2(s, why(s));
    QCOMPARE(d->state(), ShardDownload::State::Done);
    QCOMPARE(d->bytes(), qint64(m_signed.fileSize));
    QCOMPARE(d->resumedFrom(), qint64(0));
    QVERIFY(!seen.isEmpty() && seen.last() == qint64(m_signed.fileSize));
    QCOMPARE(readAll(store.pathFor(m_signed)), m_serverBytes);
    QVERIFY(QFileInfo::exists(store.manifestPathFor(m_signed)));
    QVERIFY(!QFileInfo::exists(store.partPathFor(m_signed)));
    QVERIFY(!QFileInfo::exists(store.progressPathFor(m_signed)));
    QVERIFY(!QFileInfo::exists(strayPart)); // a node holds one stage
    const std::optional<ShardManifest> installed = store.verifiedShard(kStage);
    QVERIFY(installed);
    QCOMPARE(installed->sha256, m_signed.sha256);
    QVERIFY(installed->signature); // kept, so it can be checked again later
    QVERIFY(store.reverify(*installed));
    qInfo("downloaded %.2f MB over loopback HTTPS in %lld ms (%.1f MB/s, including the TLS handshake and "
          "the final hash)",
          double(m_signed.fileSize) / 1e6, (long long)ms, double(m_signed.fileSize) / 1e3 / double(ms));

    // A second start finds it installed and fetches nothing.
    std::unique_ptr<ShardDownload> again(
        download(m_signed, store, fastRetries(), QStringLiteral("https://127.0.0.1:1")));
    const Status s2 = run(*again);
    QVERIFY2(s2, why(s2));
}

void TestShardDownload::coordinatorKilledMidDownloadThenResumed() {
    ShardStore store(m_shards);
    ShardDownloadOptions o = fastRetries();
    o.maxBytesPerSecond = 300'000;
    Relay path(m_server->port());
    std::unique_ptr<ShardDownload> d(download(m_small, store, o, path.url()));
    std::optional<Status> result;
    connect(d.get(), &ShardDownload::finished, this, [&](const Status& s) { result = s; });
    d->start();
    const qint64 total = d->total();
    QVERIFY(QTest::qWaitFor([&] { return result || d->bytes() >= total * 3 / 10; }, 30'000));
    QVERIFY2(!result, "finished before the coordinator could be killed");
    QVERIFY2(d->bytes() <= total * 7 / 10, "the bandwidth cap did not hold the download back");
    const double rate = d->rate();
    QVERIFY2(rate > 0 && rate < 1.5 * 300'000, qPrintable(QString::number(rate)));
    QVERIFY(d->etaSeconds() > 0);
    m_server->kill();
    path.cut();

    QVERIFY(QTest::qWaitFor([&] { return result.has_value(); }, 30'000));
    QVERIFY(!*result);
    QCOMPARE(d->state(), ShardDownload::State::Failed);
    qInfo("after the kill: %s", result->message().c_str());
    QVERIFY2(result->message().find("the next start resumes") != std::string::npos,
             result->message().c_str());
    Result<ShardProgress> record = ShardProgress::load(store.progressPathFor(m_small));
    QVERIFY2(record, record ? "" : record.message().c_str());
    QVERIFY(record->verifiedBytes > 0);
    QCOMPARE(record->verifiedBytes % qint64(kSmallChunk), 0);
    QVERIFY(!QFileInfo::exists(store.pathFor(m_small)));

    // Back on the same data dir, on another port: the next start asks only for the rest.
    const QString oldUrl = m_server->url();
    QVERIFY2(startCoordinator(), m_server->err().constData());
    QVERIFY(m_server->url() != oldUrl);
    std::unique_ptr<ShardDownload> resumed(download(m_small, store));
    const Status s = run(*resumed);
    QVERIFY2(s, why(s));
    QCOMPARE(resumed->resumedFrom(), record->verifiedBytes);
    QCOMPARE(readAll(store.pathFor(m_small)), m_serverBytes);
    QVERIFY(!QFileInfo::exists(store.progressPathFor(m_small)));
}

void TestShardDownload::cancelledDownloadResumesFromRecord() {
    ShardStore store(m_shards);
    const std::optional<ShardProgress> record = interruptedAt(m_small, store, 0.4);
    QVERIFY(record);
    QVERIFY(record->verifiedBytes > 0);
    // The .part may hold unverified bytes beyond the record: they are cut off, not trusted.
    QVERIFY(QFileInfo(store.partPathFor(m_small)).size() >= record->verifiedBytes);
    std::unique_ptr<ShardDownload> d(download(m_small, store));
    const Status s = run(*d);
    QVERIFY2(s, why(s));
    QCOMPARE(d->resumedFrom(), record->verifiedBytes);
    QCOMPARE(readAll(store.pathFor(m_small)), m_serverBytes);
}

void TestShardDownload::staleRecordAfterServerFileChangedRestartsFromZero() {
    ShardStore store(m_shards);
    const std::optional<ShardProgress> record = interruptedAt(m_small, store, 0.4);
    QVERIFY(record && record->verifiedBytes > 0);
    // The same bytes renamed over the path: a new file to the server, so a new ETag.
    const QString copy = serverFile() + QStringLiteral(".new");
    QVERIFY(writeAll(copy, m_serverBytes));
    QVERIFY(::rename(QFile::encodeName(copy).constData(), QFile::encodeName(serverFile()).constData()) == 0);
    std::unique_ptr<ShardDownload> d(download(m_small, store));
    const Status s = run(*d);
    QVERIFY2(s, why(s));
    QCOMPARE(d->resumedFrom(), qint64(0)); // If-Range did not match: the whole file came (200)
    QCOMPARE(readAll(store.pathFor(m_small)), m_serverBytes);
}

void TestShardDownload::truncatedPartResumesFromWhatIsThere() {
    ShardStore store(m_shards);
    const std::optional<ShardProgress> record = interruptedAt(m_small, store, 0.6);
    QVERIFY(record && record->verifiedBytes >= 2 * qint64(kSmallChunk));
    // The .part lost its tail (a crash before the data reached the disk): resume from the last
    // whole chunk that is still there.
    QFile part(store.partPathFor(m_small));
    QVERIFY(part.resize(record->verifiedBytes - qint64(kSmallChunk) / 2));
    std::unique_ptr<ShardDownload> d(download(m_small, store));
    const Status s = run(*d);
    QVERIFY2(s, why(s));
    QCOMPARE(d->resumedFrom(), record->verifiedBytes - qint64(kSmallChunk));
    QCOMPARE(readAll(store.pathFor(m_small)), m_serverBytes);
}

void TestShardDownload::tamperedShardRefusedByChunkThenFetchedWhenRestored() {
    ShardStore store(m_shards);
    const qint64 at = 3 * qint64(kSmallChunk) + 1000; // in chunk 4
    QFile file(serverFile());
    QVERIFY(file.open(QIODevice::ReadWrite));
    QVERIFY(file.seek(at));
    const char original = m_serverBytes.at(at);
    const char flipped = char(original ^ 0x01);
    QVERIFY(file.write(&flipped, 1) == 1);
    file.close();

    std::unique_ptr<ShardDownload> d(download(m_small, store));
    const Status s = run(*d);
    QVERIFY(!s);
    const std::string expected = "chunk 4 of " + m_small.file + " does not match the manifest";
    QVERIFY2(s.message().find(expected) != std::string::npos, s.message().c_str());
    QVERIFY2(s.message().find("refusing the shard") != std::string::npos, s.message().c_str());
    QVERIFY(!QFileInfo::exists(store.pathFor(m_small)));
    QVERIFY(!QFileInfo::exists(store.manifestPathFor(m_small)));
    QVERIFY(!store.verifiedShard(kStage));
    QCOMPARE(QFileInfo(store.partPathFor(m_small)).size(), 3 * qint64(kSmallChunk)); // the good prefix

    // The coordinator's one-chunk signed manifest refuses it too, naming its only chunk.
    ShardStore other(m_node->filePath(QStringLiteral("other")));
    std::unique_ptr<ShardDownload> whole(download(m_signed, other));
    const Status s2 = run(*whole);
    QVERIFY(!s2);
    QVERIFY2(s2.message().find("chunk 1 of " + m_signed.file) != std::string::npos, s2.message().c_str());

    QVERIFY(file.open(QIODevice::ReadWrite));
    QVERIFY(file.seek(at));
    QVERIFY(file.write(&original, 1) == 1);
    file.close();
    QCOMPARE(readAll(serverFile()), m_serverBytes);
    std::unique_ptr<ShardDownload> again(download(m_small, store));
    const Status s3 = run(*again);
    QVERIFY2(s3, why(s3));
    QCOMPARE(readAll(store.pathFor(m_small)), m_serverBytes);
}

void TestShardDownload::tooLittleDiskSpaceFailsBeforeAnyRequest() {
    ShardStore store(m_shards, [](const QString&) { return qint64(10) << 20; });
    // Nothing listens there: an error about the network would mean a request went out.
    std::unique_ptr<ShardDownload> d(
        download(m_signed, store, fastRetries(), QStringLiteral("https://127.0.0.1:1")));
    const Status s = run(*d);
    QVERIFY(!s);
    QVERIFY2(s.message().find("needs ") != std::string::npos &&
                 s.message().find(" free in " + m_shards.toStdString() + ", 10 MiB available") !=
                     std::string::npos,
             s.message().c_str());
    QCOMPARE(d->bytes(), qint64(0));
}

void TestShardDownload::plainHttpOffLoopbackRefused() {
    ShardStore store(m_shards);
    std::unique_ptr<ShardDownload> d(
        download(m_signed, store, fastRetries(), QStringLiteral("http://192.0.2.1:8080")));
    const Status s = run(*d);
    QVERIFY(!s);
    QVERIFY2(s.message().find("https") != std::string::npos, s.message().c_str());
}

void TestShardDownload::storeKeepsNewestAndEvictsTheRest() {
    ShardStore store(m_shards);
    QVERIFY(store.ensureDir());
    QVERIFY(!store.verifiedShard(kStage));
    std::unique_ptr<ShardDownload> d(download(m_signed, store));
    const Status s = run(*d);
    QVERIFY2(s, why(s));

    // A newer version of the same stage, installed by hand.
    ShardManifest newer = m_signed;
    newer.version = m_signed.version + 5;
    newer.file = "stage-1-v" + std::to_string(newer.version) + ".safetensors";
    QVERIFY(QFile::copy(store.pathFor(m_signed), store.pathFor(newer)));
    QVERIFY(store.saveManifest(newer));
    QCOMPARE(store.verifiedShard(kStage)->version, newer.version);
    // A manifest whose file is shorter than it says does not count.
    QFile(store.pathFor(newer)).resize(10);
    QCOMPARE(store.verifiedShard(kStage)->version, m_signed.version);
    QVERIFY(QFile(store.pathFor(newer)).resize(qint64(newer.fileSize)));
    // Sizes say complete; a full re-check finds the zeros that replaced its tail.
    QVERIFY(store.reverify(m_signed));
    const Status damaged = store.reverify(newer);
    QVERIFY(!damaged);
    QVERIFY2(damaged.message().find("chunk 1 of 1 of " + newer.file) != std::string::npos,
             damaged.message().c_str());

    const QStringList strays{
        QStringLiteral("stage-0-v3.safetensors"), QStringLiteral("stage-0-v3.safetensors.manifest.json"),
        QStringLiteral("stage-1-v9.safetensors.part"), QStringLiteral("stage-1-v9.safetensors.progress.json"),
        QStringLiteral("stage-1-v0.safetensors.progress.json.a1B2c3")};
    for (const QString& name : strays)
        QVERIFY(writeAll(m_shards + u'/' + name, "x"));
    QVERIFY(writeAll(m_shards + QStringLiteral("/README.txt"), "not a shard"));

    const Status e = store.evictExcept(kStage, newer.version);
    QVERIFY2(e, why(e));
    QStringList left = QDir(m_shards).entryList(QDir::Files);
    left.sort();
    const QString kept = QString::fromStdString(newer.file);
    QCOMPARE(left,
             (QStringList{QStringLiteral("README.txt"), kept, kept + QStringLiteral(".manifest.json")}));
    QCOMPARE(store.verifiedShard(kStage)->version, newer.version);
    QVERIFY(!store.verifiedShard(0));
}

QTEST_GUILESS_MAIN(TestShardDownload)
#include "test_shard_download.moc"
