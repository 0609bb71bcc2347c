// SPDX-License-Identifier: Apache-2.0
// ManifestVersions: a signed stage manifest older than the one this node already accepted for the
// same run is refused — a coordinator (hostile, or restored from an old backup) cannot roll the
// node's weights back by signing yesterday's manifest again. Real signed manifests (an Ed25519
// coordinator key, parsed by parseSignedManifest as the node receives them) and the record on disk,
// read again by a new object as a restarted node would.
#include "common/Identity.h"
#include "node/NodeFiles.h"
#include "node/shard/ManifestVersions.h"
#include "protocol/ManifestSignature.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera;
using namespace tessera::node;
using gpu::ShardManifest;

class TestManifestVersions final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void olderVersionRefusedAfterARestart();
    void sameVersionWithAnotherShardRefused();
    void stagesAreKeptApart();
    void anotherRunStartsAfresh();

private:
    // The manifest of `stage` version `version` over `content`, signed by `key`, as the node parses it.
    ShardManifest signedManifest(const Identity& key, int stage, qint64 version, const QByteArray& content,
                                 const std::string& modelHash = std::string(64, 'a'));
    Status accept(const ShardManifest& manifest, const Identity& key) const {
        // A new object each time: what it knows comes from the data dir, as after a restart.
        return ManifestVersions(NodeFiles(m_dir->path())).accept(manifest, key.publicKey());
    }

    std::unique_ptr<QTemporaryDir> m_dir;
    std::optional<Identity> m_key;
};

void TestManifestVersions::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    Result<Identity> key = Identity::generate();
    QVERIFY(key);
    m_key.emplace(std::move(key).value());
}

ShardManifest TestManifestVersions::signedManifest(const Identity& key, int stage, qint64 version,
                                                   const QByteArray& content, const std::string& modelHash) {
    const QString path = m_dir->filePath(QStringLiteral("stage-%1-v%2.safetensors").arg(stage).arg(version));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(content) != content.size())
        qFatal("cannot write %s", qPrintable(path));
    file.close();
    Result<ShardManifest> built =
        ShardManifest::build(QFile::encodeName(path).toStdString(), modelHash, stage, version, version * 10);
    if (!built)
        qFatal("%s", built.message().c_str());
    protocol::signManifest(*built, key);
    Result<ShardManifest> parsed =
        protocol::parseSignedManifest(QByteArray::fromStdString(built->toJson()), key.publicKey());
    if (!parsed)
        qFatal("%s", parsed.message().c_str());
    return *parsed;
}

void TestManifestVersions::olderVersionRefusedAfterARestart() {
    // Tried: the node accepted version 5; the coordinator then serves version 4, validly signed.
    QVERIFY(accept(signedManifest(*m_key, 0, 5, "five"), *m_key));
    const Status older = accept(signedManifest(*m_key, 0, 4, "four"), *m_key);
    QVERIFY(!older);
    QVERIFY2(older.message().find("offered version 4 of stage 0, older than version 5") != std::string::npos,
             older.message().c_str());
    QVERIFY2(older.message().find("manifest-versions.json") != std::string::npos, older.message().c_str());
    // The version it holds again, and a newer one, are fine; then the floor is the newer one.
    QVERIFY(accept(signedManifest(*m_key, 0, 5, "five"), *m_key));
    QVERIFY(accept(signedManifest(*m_key, 0, 6, "six"), *m_key));
    QVERIFY(!accept(signedManifest(*m_key, 0, 5, "five"), *m_key));
}

void TestManifestVersions::sameVersionWithAnotherShardRefused() {
    // Tried: two different shards, both signed as version 3 of stage 0.
    QVERIFY(accept(signedManifest(*m_key, 0, 3, "one shard"), *m_key));
    const Status other = accept(signedManifest(*m_key, 0, 3, "another shard"), *m_key);
    QVERIFY(!other);
    QVERIFY2(other.message().find("signed two different shards as version 3 of stage 0") != std::string::npos,
             other.message().c_str());
}

void TestManifestVersions::stagesAreKeptApart() {
    // A reassign to another stage starts at that stage's own version, and coming back still
    // remembers the first stage's.
    QVERIFY(accept(signedManifest(*m_key, 0, 7, "seven"), *m_key));
    QVERIFY(accept(signedManifest(*m_key, 1, 2, "two"), *m_key));
    QVERIFY(!accept(signedManifest(*m_key, 0, 6, "six"), *m_key));
    QVERIFY(!accept(signedManifest(*m_key, 1, 1, "one"), *m_key));
}

void TestManifestVersions::anotherRunStartsAfresh() {
    // A new run (another model config, or another coordinator key) numbers its versions again.
    QVERIFY(accept(signedManifest(*m_key, 0, 9, "nine"), *m_key));
    QVERIFY(accept(signedManifest(*m_key, 0, 1, "new model", std::string(64, 'b')), *m_key));
    Result<Identity> other = Identity::generate();
    QVERIFY(other);
    QVERIFY(accept(signedManifest(*other, 0, 1, "new key"), *other));
    // ...and the new run's floor holds from there.
    QVERIFY(accept(signedManifest(*other, 0, 4, "four"), *other));
    QVERIFY(!accept(signedManifest(*other, 0, 2, "two"), *other));
}

QTEST_GUILESS_MAIN(TestManifestVersions)
#include "test_manifest_versions.moc"
