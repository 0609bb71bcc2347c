// SPDX-License-Identifier: Apache-2.0
// StageVersionStore on a real SQLite file and a real PostgreSQL server: versions of a stage are
// published once, found again intact, and the newest one is the stage's latest; a version refused
// as damaged is neither latest nor found, the one before it is, and its number is not used again.
#include "DatabaseBackends.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/StageVersionStore.h"

#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;

namespace {

StageVersion version(int stage, qint64 v) {
    StageVersion s;
    s.stage = stage;
    s.version = v;
    s.step = v * 400;
    s.file = QStringLiteral("stage-%1/v%2.safetensors").arg(stage).arg(v);
    s.fileSize = 5'000'000'000 + v; // past 32 bits: a real 8B-model stage shard
    s.sha256 = QString(64, QChar(u'a' + int(v % 6)));
    s.manifestJson =
        QStringLiteral("{\"stage\":%1,\"version\":%2,\"note\":\"\u00e9t\u00e9\"}").arg(stage).arg(v);
    s.createdAtMs = 1'700'000'000'000 + v;
    return s;
}

void compareVersions(const StageVersion& a, const StageVersion& b) {
    QCOMPARE(a.stage, b.stage);
    QCOMPARE(a.version, b.version);
    QCOMPARE(a.step, b.step);
    QCOMPARE(a.file, b.file);
    QCOMPARE(a.fileSize, b.fileSize);
    QCOMPARE(a.sha256, b.sha256);
    QCOMPARE(a.manifestJson, b.manifestJson);
    QCOMPARE(a.createdAtMs, b.createdAtMs);
}

} // namespace

class TestCoordinatorStageVersionStore final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void addFindAndLatest_data() { test::DatabaseBackends::addRows(); }
    void addFindAndLatest();
    void publishedOnce_data() { test::DatabaseBackends::addRows(); }
    void publishedOnce();
    void refusedIsNeverOffered_data() { test::DatabaseBackends::addRows(); }
    void refusedIsNeverOffered();
};

void TestCoordinatorStageVersionStore::addFindAndLatest() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    StageVersionStore versions(*db);
    QVERIFY(!versions.latest(0).value().has_value());

    // Added out of order: latest is the highest version, not the last added.
    for (qint64 v : {2, 10, 1}) {
        Status s = versions.add(version(0, v));
        QVERIFY2(s, failure(s));
    }
    QVERIFY(versions.add(version(1, 3)));

    Result<std::optional<StageVersion>> latest = versions.latest(0);
    QVERIFY2(latest, failure(latest));
    QVERIFY(latest->has_value());
    compareVersions(**latest, version(0, 10));
    compareVersions(versions.latest(1).value().value(), version(1, 3));
    QVERIFY(!versions.latest(2).value().has_value());

    Result<std::optional<StageVersion>> found = versions.find(0, 2);
    QVERIFY2(found, failure(found));
    QVERIFY(found->has_value());
    compareVersions(**found, version(0, 2));
    QVERIFY(!versions.find(0, 3).value().has_value());
    QVERIFY(!versions.find(1, 2).value().has_value());
}

void TestCoordinatorStageVersionStore::publishedOnce() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    StageVersionStore versions(*db);
    QVERIFY(versions.add(version(0, 1)));
    StageVersion other = version(0, 1);
    other.sha256 = QString(64, u'f');
    QVERIFY(!versions.add(other));
    QCOMPARE(versions.find(0, 1).value()->sha256, version(0, 1).sha256);
}

void TestCoordinatorStageVersionStore::refusedIsNeverOffered() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    StageVersionStore versions(*db);
    for (qint64 v : {1, 2, 3})
        QVERIFY(versions.add(version(0, v)));
    QCOMPARE(versions.latest(0, 3).value().value().version, 2); // the newest below 3
    Status refused = versions.refuse(0, 3, QStringLiteral("sha256 mismatch"));
    QVERIFY2(refused, failure(refused));
    QCOMPARE(versions.latest(0).value().value().version, 2);
    QVERIFY(!versions.find(0, 3).value().has_value());
    QCOMPARE(versions.highestVersion(0).value(), 3); // the next publish is 4, not 3 again
    QVERIFY(versions.refuse(0, 2, QString()));
    QVERIFY(versions.refuse(0, 1, QString()));
    QVERIFY(!versions.latest(0).value().has_value()); // nothing usable: the start says so
    QCOMPARE(versions.highestVersion(1).value(), 0);
}

QTEST_GUILESS_MAIN(TestCoordinatorStageVersionStore)
#include "test_coordinator_stage_version_store.moc"
