// SPDX-License-Identifier: Apache-2.0
// ShardDownload on a disk that fills up mid-download (a real tmpfs, ENOSPC), against the real
// tessera-coordinator over HTTPS.
//
// Tried: the node's data dir is on a small filesystem with room for the shard (the free-space
// check passes); once part of the shard is verified, another program takes every free byte. What
// a user notices: the download stops with an error that says the disk is full and that the
// verified part is kept; once they free space, the next try resumes from that verified part
// (nothing fetched twice) and the shard verifies byte for byte.
#include "ShardDownloadTestSupport.h"
#include "SmallFilesystem.h"

class TestShardDownloadDiskFull final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase() { m_server.reset(); }
    void aFullDiskStopsTheDownloadAndItResumesWhenSpaceReturns();

private:
    QTemporaryDir m_tmp;
    std::unique_ptr<KillableCoordinator> m_server;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
    ShardManifest m_manifest; // the coordinator's shard, hashed in 256 KiB chunks
    QByteArray m_serverBytes;
};

void TestShardDownloadDiskFull::initTestCase() {
    QVERIFY(m_tmp.isValid());
    const QString runDir = m_tmp.filePath(QStringLiteral("run"));
    m_server = std::make_unique<KillableCoordinator>(runDir);
    QVERIFY2(m_server->waitReady(), m_server->err().constData());
    const QList<QSslCertificate> certs = QSslCertificate::fromPath(runDir + QStringLiteral("/tls.crt"));
    QCOMPARE(certs.size(), 1);
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(certs);
    // The coordinator's manifest for the stage, its file hashed again in small chunks so that part
    // of it is verified long before the end.
    QNetworkRequest request(QUrl(m_server->url() + QStringLiteral("/v1/shards/%1/manifest").arg(kStage)));
    request.setSslConfiguration(m_ssl);
    std::unique_ptr<QNetworkReply> reply(m_net.get(request));
    QVERIFY(QTest::qWaitFor([&] { return reply->isFinished(); }, 30'000));
    Result<ShardManifest> served = ShardManifest::fromJson(reply->readAll().toStdString());
    QVERIFY2(served, served ? "" : served.message().c_str());
    const QString file = runDir + QStringLiteral("/shards/") + QString::fromStdString(served->file);
    m_serverBytes = readAll(file);
    Result<ShardManifest> m =
        ShardManifest::build(QFile::encodeName(file).toStdString(), served->modelConfigHash, served->stage,
                             served->version, served->step, kSmallChunk);
    QVERIFY2(m, m ? "" : m.message().c_str());
    m_manifest = *m;
    QVERIFY(m_manifest.chunks.size() >= 5);
}

void TestShardDownloadDiskFull::aFullDiskStopsTheDownloadAndItResumesWhenSpaceReturns() {
    test::SmallFilesystem fs;
    // Room for the shard and the store's margin, so the download starts as it would on a real disk.
    const Status mounted = fs.mount(qint64(m_manifest.fileSize) + ShardStore::kSpaceMargin + (4 << 20));
    QVERIFY2(mounted, mounted ? "" : mounted.message().c_str());
    const ShardStore store(fs.path() + QStringLiteral("/shards"));

    ShardDownloadOptions slow;
    slow.maxBytesPerSecond = 600'000;
    slow.maxRetries = 2;
    slow.firstRetryDelayMs = 20;
    slow.maxRetryDelayMs = 50;
    std::optional<Status> result;
    {
        ShardDownload d(&m_net, m_ssl, QUrl(m_server->url()), m_manifest, store, slow);
        connect(&d, &ShardDownload::finished, this, [&](const Status& s) { result = s; });
        d.start();
        QVERIFY(QTest::qWaitFor([&] { return result || d.bytes() >= 3 * qint64(kSmallChunk); }, 30'000));
        QVERIFY2(!result, "the download ended before the disk could be filled");
        const Result<qint64> taken = fs.fill();
        QVERIFY2(taken, taken ? "" : taken.message().c_str());
        QVERIFY(QTest::qWaitFor([&] { return result.has_value(); }, 60'000));
    }
    QVERIFY2(!*result, "a download onto a full disk reported success");
    const std::string error = result->message();
    qInfo("what the node says: %s", error.c_str());
    QVERIFY2(error.find("No space left on device") != std::string::npos, error.c_str());
    QVERIFY2(error.find("are kept and the next start resumes there") != std::string::npos, error.c_str());
    QVERIFY(!QFile::exists(store.pathFor(m_manifest))); // nothing half-written was installed

    const Result<ShardProgress> record = ShardProgress::load(store.progressPathFor(m_manifest));
    QVERIFY2(record, record ? "" : record.message().c_str());
    QVERIFY(record->verifiedBytes >= qint64(kSmallChunk));

    // The space returns: the next try resumes from the verified part and the shard verifies.
    fs.unfill();
    ShardDownloadOptions fast = slow;
    fast.maxBytesPerSecond = 0;
    ShardDownload again(&m_net, m_ssl, QUrl(m_server->url()), m_manifest, store, fast);
    result.reset();
    connect(&again, &ShardDownload::finished, this, [&](const Status& s) { result = s; });
    again.start();
    QVERIFY(QTest::qWaitFor([&] { return result.has_value(); }, 60'000));
    QVERIFY2(*result, result->message().c_str());
    QCOMPARE(again.resumedFrom(), record->verifiedBytes);
    QCOMPARE(readAll(store.pathFor(m_manifest)), m_serverBytes);
    const Status verified = ShardStore::verifyFile(m_manifest, store.pathFor(m_manifest));
    QVERIFY2(verified, verified ? "" : verified.message().c_str());
}

int main(int argc, char** argv) {
    test::SmallFilesystem::reexecUnsharedIfNeeded(argc, argv);
    QCoreApplication app(argc, argv);
    TestShardDownloadDiskFull test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_shard_download_disk_full.moc"
