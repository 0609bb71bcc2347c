// SPDX-License-Identifier: Apache-2.0
// tessera-coordinator refusing to start a run it cannot keep: a dataset that is not there, not
// readable or not what the run was created with, plain HTTP anywhere but loopback, and a data dir
// another coordinator is using (three once ran on one, each writing the same shards and database);
// a lock left by a coordinator that was killed does not keep the next one out; a large new run (8b in
// 7 stages: its shards take more than 10 minutes to write here) answers /v1/status within seconds
// (it once answered nothing until every shard was written), SIGTERM while it writes (once ignored for
// more than 15 s) stops it cleanly within seconds, and what it left is not taken for a run by the
// next start. A token dataset is pinned by its manifest's hash.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "base/Sha256.h"
#include "base/ShardManifest.h"
#include "base/TokenDataset.h"
#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"
#include "protocol/ManifestSignature.h"
#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sys/stat.h>

using namespace tessera;

class TestCoordinatorRuns final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void datasetIsCheckedStoredAndNeverChanges();
    void aTokenDatasetIsPinnedByItsHash();
    void plainHttpOffLoopbackRefused();
    void oneCoordinatorPerDataDir();
    void sigtermStopsARunBeingCreated();
    void momentBitsAreTheRunsAndNeverChange();

private:
    QStringList args(const QString& dataDir, const QStringList& extra = {}) const {
        return QStringList{QStringLiteral("--data-dir"), dataDir, QStringLiteral("--listen"),
                           QStringLiteral("127.0.0.1:0")} +
               extra;
    }

    QTemporaryDir m_dir;
};

void TestCoordinatorRuns::datasetIsCheckedStoredAndNeverChanges() {
    const QString tokens = m_dir.filePath(QStringLiteral("tokens.u16"));
    const QString odd = m_dir.filePath(QStringLiteral("odd.u16"));
    // Token id 1 as little-endian u16 (the coordinator reads the tokens: each must be < 256).
    for (const auto& [path, size] : {std::pair{tokens, 64}, std::pair{odd, 63}}) {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray("\1\0", 2).repeated(32).left(size));
    }
    const QString dir = m_dir.filePath(QStringLiteral("dataset"));
    const auto start = [&](const QString& spec) {
        return std::make_unique<CoordinatorProcess>(
            args(dir, spec.isEmpty() ? QStringList{QStringLiteral("--insecure-loopback")}
                                     : QStringList{QStringLiteral("--insecure-loopback"),
                                                   QStringLiteral("--dataset"), spec}));
    };

    // Refused before anything is written, each with a message naming --dataset.
    for (const QString& bad :
         QStringList{QStringLiteral("nope:x"), QStringLiteral("text:"),
                     QStringLiteral("text:") + m_dir.filePath(u"missing"_qs),
                     QStringLiteral("tokens32:") + m_dir.path(), QStringLiteral("tokens16:") + odd,
                     QStringLiteral("synthetic:order=x"), QStringLiteral("synthetic:colour=2")}) {
        std::unique_ptr<CoordinatorProcess> refused = start(bad);
        QCOMPARE(refused->waitExit(), 1);
        QVERIFY2(refused->err().contains("--dataset"), refused->err().constData());
        QVERIFY2(!QFileInfo::exists(dir), qPrintable(bad));
    }

    const QString spec = QStringLiteral("tokens16:") + tokens;
    std::unique_ptr<CoordinatorProcess> server = start(spec);
    QVERIFY2(server->waitReady(), server->err().constData());
    QCOMPARE(server->printed("dataset"), spec);
    QFile run(dir + QStringLiteral("/run.json"));
    QVERIFY(run.open(QIODevice::ReadOnly));
    const QJsonObject stored = QJsonDocument::fromJson(run.readAll()).object();
    QCOMPARE(stored.value(u"dataset").toString(), spec);
    QCOMPARE(stored.value(u"model").toObject().value(u"name").toString(), QStringLiteral("tiny"));
    server.reset();

    // Resumed with or without naming it again; another dataset is refused like another model.
    for (const QString& again : QStringList{QString(), spec}) {
        server = start(again);
        QVERIFY2(server->waitReady(), server->err().constData());
        QVERIFY(server->out().contains("resumed the run"));
        QCOMPARE(server->printed("dataset"), spec);
        server.reset();
    }
    server = start(QStringLiteral("synthetic"));
    QCOMPARE(server->waitExit(), 1);
    QVERIFY2(server->err().contains("A run's dataset never changes"), server->err().constData());

    // A run.json from before --dataset (the bare model config) is a synthetic run.
    QFile legacy(dir + QStringLiteral("/run.json"));
    QVERIFY(legacy.open(QIODevice::WriteOnly | QIODevice::Truncate));
    legacy.write(QJsonDocument(stored.value(u"model").toObject()).toJson());
    legacy.close();
    server = start(QString());
    QVERIFY2(server->waitReady(), server->err().constData());
    QCOMPARE(server->printed("dataset"), QStringLiteral("synthetic"));
}

// --moment-bits 8 is the run's (every replica and the checkpoint keep AdamW's moments alike): stored in
// the model, kept on a restart that does not name it, refused when changed; anything but 32 or 8 is
// refused before anything is written.
void TestCoordinatorRuns::momentBitsAreTheRunsAndNeverChange() {
    const QString dir = m_dir.filePath(QStringLiteral("moments"));
    const auto start = [&](const QStringList& extra) {
        return std::make_unique<CoordinatorProcess>(
            args(dir, QStringList{QStringLiteral("--insecure-loopback")} + extra));
    };
    std::unique_ptr<CoordinatorProcess> server =
        start({QStringLiteral("--moment-bits"), QStringLiteral("16")});
    QCOMPARE(server->waitExit(), 2);
    QVERIFY2(server->err().contains("--moment-bits must be 32 or 8"), server->err().constData());
    QVERIFY(!QFileInfo::exists(dir));

    server = start({QStringLiteral("--moment-bits"), QStringLiteral("8")});
    QVERIFY2(server->waitReady(), server->err().constData());
    server.reset();
    QFile run(dir + QStringLiteral("/run.json"));
    QVERIFY(run.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(run.readAll())
                 .object()
                 .value(u"model")
                 .toObject()
                 .value(u"moment_bits")
                 .toInt(),
             8);
    server = start({});
    QVERIFY2(server->waitReady(), server->err().constData());
    QVERIFY(server->out().contains("resumed the run"));
    server.reset();
    server = start({QStringLiteral("--moment-bits"), QStringLiteral("32")});
    QCOMPARE(server->waitExit(), 1);
    QVERIFY2(server->err().contains("A run's model never changes") && server->err().contains("--moment-bits"),
             server->err().constData());
}

// tessera-data's datasets (written by hand here; tests/gpu/data builds real ones with SentencePiece):
// the run stores the manifest's SHA-256 with the path and refuses to resume on a dataset whose
// shard or manifest changed since.
void TestCoordinatorRuns::aTokenDatasetIsPinnedByItsHash() {
    const std::filesystem::path data = m_dir.filePath(u"tokens-dataset"_qs).toStdString();
    std::filesystem::create_directories(data);
    std::vector<std::int32_t> train(4096), heldOut(512, 3);
    for (std::size_t i = 0; i < train.size(); ++i)
        train[i] = std::int32_t(i * 31 % 250);
    const auto put = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(data / name, std::ios::binary) << bytes;
        return gpu::TokenDatasetManifest::File{name, bytes.size(), gpu::sha256Hex(bytes)};
    };
    gpu::TokenDatasetManifest m;
    m.tokenizer = put("tokenizer.model", "a tokenizer");
    m.vocabSize = 256;
    m.train = {put("train-00000.tok", gpu::encodeTokens(train, 2))};
    m.heldOut = {put("held-out-00000.tok", gpu::encodeTokens(heldOut, 2))};
    m.trainTokens = std::int64_t(train.size());
    m.heldOutTokens = std::int64_t(heldOut.size());
    m.heldOutFraction = 0.1;
    std::ofstream(data / "manifest.json", std::ios::binary) << m.toJson();
    const QString hash = QString::fromStdString(*gpu::sha256FileHex(data / "manifest.json"));

    const QString dir = m_dir.filePath(QStringLiteral("pinned"));
    const QStringList first{QStringLiteral("--insecure-loopback"), QStringLiteral("--dataset"),
                            QStringLiteral("dataset:") + QString::fromStdString(data.string())};
    auto server = std::make_unique<CoordinatorProcess>(args(dir, first));
    QVERIFY2(server->waitReady(), server->err().constData());
    const QString pinned =
        QStringLiteral("dataset:%1/manifest.json#sha256=%2").arg(QString::fromStdString(data.string()), hash);
    QCOMPARE(server->printed("dataset"), pinned);
    server.reset();

    // One byte of a shard changed: the resumed run refuses it and names the shard.
    const std::string shard = gpu::encodeTokens(train, 2);
    std::string changed = shard;
    changed[100] = char(changed[100] ^ 1);
    std::ofstream(data / "train-00000.tok", std::ios::binary | std::ios::trunc) << changed;
    server = std::make_unique<CoordinatorProcess>(args(dir, {QStringLiteral("--insecure-loopback")}));
    QCOMPARE(server->waitExit(), 1);
    QVERIFY2(server->err().contains("train-00000.tok") && server->err().contains("SHA-256"),
             server->err().constData());
    std::ofstream(data / "train-00000.tok", std::ios::binary | std::ios::trunc) << shard;

    // The manifest rewritten (another seed: another dataset) is refused as the run's.
    m.seed = 2;
    std::ofstream(data / "manifest.json", std::ios::binary | std::ios::trunc) << m.toJson();
    server = std::make_unique<CoordinatorProcess>(args(dir, {QStringLiteral("--insecure-loopback")}));
    QCOMPARE(server->waitExit(), 1);
    QVERIFY2(server->err().contains("changed since the run started"), server->err().constData());
    // Named again, it is another --dataset than the run's.
    server = std::make_unique<CoordinatorProcess>(args(dir, first));
    QCOMPARE(server->waitExit(), 1);
    QVERIFY2(server->err().contains("A run's dataset never changes"), server->err().constData());
}

void TestCoordinatorRuns::plainHttpOffLoopbackRefused() {
    const QString dir = m_dir.filePath(QStringLiteral("refused"));
    CoordinatorProcess refused({QStringLiteral("--data-dir"), dir, QStringLiteral("--listen"),
                                QStringLiteral("0.0.0.0:0"), QStringLiteral("--insecure-loopback")});
    QCOMPARE(refused.waitExit(), 1);
    QVERIFY2(refused.err().contains("refusing plain HTTP on 0.0.0.0"), refused.err().constData());
    QVERIFY(!QFileInfo::exists(dir)); // refused before anything was written
}

void TestCoordinatorRuns::oneCoordinatorPerDataDir() {
    const QString dir = m_dir.filePath(QStringLiteral("shared"));
    const QStringList a = args(dir, {QStringLiteral("--insecure-loopback")});
    auto first = std::make_unique<CoordinatorProcess>(a);
    QVERIFY2(first->waitReady(), first->err().constData());
    // A second one on the same dir stops at once and says who holds it; the first is untouched.
    CoordinatorProcess second(a);
    QCOMPARE(second.waitExit(), 1);
    const QByteArray holder = "another tessera-coordinator (pid " + QByteArray::number(first->pid());
    QVERIFY2(second.err().contains(holder), second.err().constData());
    QVERIFY2(second.err().contains("--data-dir"), second.err().constData());
    QVERIFY(first->out().count("resumed the run") == 0);
    // Killed (no chance to release the lock): the next start takes the stale lock over and resumes.
    first->kill();
    QVERIFY(QFileInfo::exists(dir + QStringLiteral("/coordinator.lock")));
    CoordinatorProcess third(a);
    QVERIFY2(third.waitReady(), third.err().constData());
    QVERIFY(third.out().contains("resumed the run"));
}

void TestCoordinatorRuns::sigtermStopsARunBeingCreated() {
    const QString dir = m_dir.filePath(QStringLiteral("creating"));
    const QStringList a = args(dir, {QStringLiteral("--insecure-loopback"), QStringLiteral("--model"),
                                     QStringLiteral("8b"), QStringLiteral("--stages"), QStringLiteral("7")});
    QNetworkAccessManager net;
    for (int attempt = 0; attempt < 2; ++attempt) {
        QElapsedTimer started;
        started.start();
        CoordinatorProcess creating(a);
        QVERIFY2(creating.waitListening(), creating.err().constData());
        const test::HttpReply status = test::httpRequest(net, QSslConfiguration::defaultConfiguration(),
                                                         creating.url() + u"/v1/status"_qs);
        QCOMPARE(status.json().value(u"state").toString(), QStringLiteral("preparing"));
        QVERIFY2(started.elapsed() < 60'000, QByteArray::number(started.elapsed()).constData());
        // In the middle of writing stage 0's 1.15B weights.
        QTest::qWait(1'500);
        QElapsedTimer stopping;
        stopping.start();
        QCOMPARE(creating.terminate(10'000), 0);
        QVERIFY2(stopping.elapsed() < 5'000, QByteArray::number(stopping.elapsed()).constData());
        QVERIFY2(creating.err().contains("the next start writes them again"), creating.err().constData());
        // No version of any stage was recorded: the next start creates the run again rather than
        // serving shards half written (the second attempt shows it does, taking the dead one's lock).
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("check"));
            db.setDatabaseName(dir + QStringLiteral("/coordinator.sqlite"));
            QVERIFY(db.open());
            QSqlQuery q(QStringLiteral("SELECT COUNT(*) FROM stage_versions"), db);
            QVERIFY(q.next());
            QCOMPARE(q.value(0).toInt(), 0);
        }
        QSqlDatabase::removeDatabase(QStringLiteral("check"));
    }
}

QTEST_GUILESS_MAIN(TestCoordinatorRuns)
#include "test_coordinator_runs.moc"
