// SPDX-License-Identifier: Apache-2.0
// `tessera-node shard inspect`, run as a real process on real files: a good shard is listed, a
// bad one is refused with one line naming the reason, never a crash.
#include "base/Sha256.h"
#include "base/ShardManifest.h"
#include "shard/SafetensorsWriter.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "TestSupport.h"

#include <filesystem>
#include <vector>

using namespace tessera;

namespace {

using Run = tessera::test::ProcessRun;

Run runNode(const QStringList& arguments) {
    return tessera::test::runProcess(QStringLiteral(TESSERA_NODE_PATH), arguments);
}

Run inspect(const QString& file, const QString& manifest = {}) {
    QStringList args{QStringLiteral("shard"), QStringLiteral("inspect"), file};
    if (!manifest.isEmpty())
        args << QStringLiteral("--manifest") << manifest;
    return runNode(args);
}

std::filesystem::path native(const QString& path) {
    return std::filesystem::path(QFile::encodeName(path).toStdString());
}

std::vector<std::byte> bytes(std::size_t n) {
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::byte>(i * 37 + 11);
    return out;
}

// The error contract: exit 1 and exactly one line on stderr.
bool isOneLineFailure(const Run& run) {
    return run.exitCode == 1 && run.err.startsWith("tessera-node: shard inspect: ") &&
           run.err.count('\n') == 1 && run.err.endsWith('\n');
}

} // namespace

class TestShardInspect : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_shard;
    QString m_manifest;

    void writeShard() {
        gpu::SafetensorsWriter w;
        QVERIFY(w.add("layers.0.attn.wq", gpu::Dtype::F32, {2, 3}, bytes(24)).ok());
        QVERIFY(w.add("layers.0.norm", gpu::Dtype::BF16, {200}, bytes(400)).ok());
        QVERIFY(w.add("step", "I64", {}, bytes(8)).ok());
        QVERIFY(w.setMetadata("stage", "1").ok());
        QVERIFY(w.write(native(m_shard)).ok());
        // Small chunks, so the file spans several.
        const auto manifest =
            gpu::ShardManifest::build(native(m_shard), gpu::sha256Hex("tiny"), 1, 2, 300, 128);
        QVERIFY2(manifest.ok(), manifest ? "" : manifest.message().c_str());
        QFile f(m_manifest);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(manifest->toJson()));
    }

private Q_SLOTS:
    void init() {
        QVERIFY(m_dir.isValid());
        m_shard = m_dir.filePath(QStringLiteral("stage-1.safetensors"));
        m_manifest = m_dir.filePath(QStringLiteral("stage-1.manifest.json"));
        writeShard();
    }

    void goodFileListsItsTensors() {
        const Run run = inspect(m_shard);
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.err.isEmpty(), run.err.constData());
        QVERIFY2(run.out.contains("3 tensors"), run.out.constData());
        QVERIFY(run.out.contains("layers.0.attn.wq"));
        QVERIFY(run.out.contains("[2,3]"));
        QVERIFY(run.out.contains("BF16"));
        QVERIFY(run.out.contains("stage: 1"));

        const Run json =
            runNode({QStringLiteral("shard"), QStringLiteral("inspect"), m_shard, QStringLiteral("--json")});
        QCOMPARE(json.exitCode, 0);
        QJsonParseError error{};
        const QJsonObject root = QJsonDocument::fromJson(json.out, &error).object();
        QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
        const QJsonArray tensors = root.value(u"tensors").toArray();
        QCOMPARE(tensors.size(), 3);
        const QJsonObject first = tensors.first().toObject();
        QCOMPARE(first.value(u"name").toString(), QStringLiteral("layers.0.attn.wq"));
        QCOMPARE(first.value(u"dtype").toString(), QStringLiteral("F32"));
        QCOMPARE(first.value(u"bytes").toInteger(), 24);
        QCOMPARE(first.value(u"shape").toArray(), (QJsonArray{2, 3}));
        QCOMPARE(tensors.at(2).toObject().value(u"shape").toArray(), QJsonArray{}); // the scalar
        QCOMPARE(root.value(u"metadata").toObject().value(u"stage").toString(), QStringLiteral("1"));
        QVERIFY(!root.contains(u"manifest"));
    }

    void goodFileWithItsManifestIsVerified() {
        const Run run = inspect(m_shard, m_manifest);
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.out.contains("manifest: verified (stage 1, version 2, step 300"), run.out.constData());

        const Run json = runNode({QStringLiteral("shard"), QStringLiteral("inspect"), m_shard,
                                  QStringLiteral("--manifest"), m_manifest, QStringLiteral("--json")});
        QCOMPARE(json.exitCode, 0);
        const QJsonObject manifest = QJsonDocument::fromJson(json.out).object().value(u"manifest").toObject();
        QCOMPARE(manifest.value(u"verified").toBool(), true);
        QCOMPARE(manifest.value(u"stage").toInteger(), 1);
        QVERIFY(manifest.value(u"chunks").toInteger() > 2);
    }

    void tamperedByteNamesTheChunk() {
        QFile f(m_shard);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.seek(f.size() - 10)); // in the data, inside the last chunk
        const char c = f.peek(1).at(0);
        f.write(QByteArray(1, static_cast<char>(c ^ 0x40)));
        f.close();
        const qint64 size = QFileInfo(m_shard).size();
        const QByteArray chunks = QByteArray::number((size + 127) / 128);

        const Run run = inspect(m_shard, m_manifest);
        QVERIFY2(isOneLineFailure(run), run.err.constData());
        const QByteArray expected = "chunk " + chunks + " of " + chunks + " does not match the manifest";
        QVERIFY2(run.err.contains(expected), run.err.constData());
        QVERIFY(run.out.isEmpty());
    }

    void truncatedFileFails() {
        QVERIFY(QFile::resize(m_shard, QFileInfo(m_shard).size() - 100));
        const Run withManifest = inspect(m_shard, m_manifest);
        QVERIFY2(isOneLineFailure(withManifest), withManifest.err.constData());
        QVERIFY2(withManifest.err.contains("truncated or incomplete download"), withManifest.err.constData());

        const Run alone = inspect(m_shard);
        QVERIFY2(isOneLineFailure(alone), alone.err.constData());
        QVERIFY2(alone.err.contains("(truncated?)"), alone.err.constData());
    }

    void garbageFileFailsWithOneLine() {
        QFile f(m_shard);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":\n\x01\xff garbage", 24));
        f.close();
        const Run run = inspect(m_shard);
        QVERIFY2(isOneLineFailure(run), run.err.constData());
        QVERIFY2(run.err.contains("safetensors header"), run.err.constData());

        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("not a shard at all");
        f.close();
        const Run text = inspect(m_shard);
        QVERIFY2(isOneLineFailure(text), text.err.constData());
        QVERIFY2(text.err.contains("exceeds the limit"), text.err.constData());

        // A message quoting the file (a duplicate key "a\nb") still fits on one line.
        const QByteArray header = R"({"a\nb":1,"a\nb":2})";
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray(1, static_cast<char>(header.size())) + QByteArray(7, '\0') + header);
        f.close();
        const Run quoting = inspect(m_shard);
        QVERIFY2(isOneLineFailure(quoting), quoting.err.constData());
        QVERIFY2(quoting.err.contains("duplicate key"), quoting.err.constData());

        const Run badManifest = inspect(m_dir.filePath(QStringLiteral("x")), m_shard);
        QVERIFY2(isOneLineFailure(badManifest), badManifest.err.constData());
        QVERIFY2(badManifest.err.contains("shard manifest: JSON:"), badManifest.err.constData());
    }

    void nonexistentFileFails() {
        const Run run = inspect(m_dir.filePath(QStringLiteral("missing.safetensors")));
        QVERIFY2(isOneLineFailure(run), run.err.constData());
        QVERIFY2(run.err.contains("No such file"), run.err.constData());
        const Run noManifest = inspect(m_shard, m_dir.filePath(QStringLiteral("missing.json")));
        QVERIFY2(isOneLineFailure(noManifest), noManifest.err.constData());
    }

    void badArgumentsAreUsageErrors() {
        QCOMPARE(runNode({QStringLiteral("shard")}).exitCode, 2);
        QCOMPARE(runNode({QStringLiteral("shard"), QStringLiteral("frob")}).exitCode, 2);
        QCOMPARE(runNode({QStringLiteral("shard"), QStringLiteral("inspect")}).exitCode, 2);
        const Run help = runNode({QStringLiteral("--help")});
        QVERIFY(help.out.contains("shard inspect FILE"));
    }
};

QTEST_GUILESS_MAIN(TestShardInspect)
#include "test_shard_inspect.moc"
