// SPDX-License-Identifier: Apache-2.0
// SessionStore on a real SQLite file and a real PostgreSQL server: a session is found while
// valid, heartbeats, expires, is revoked, is purged, and only exists for a registered node.
#include "DatabaseBackends.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/SessionStore.h"

#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;
using namespace std::chrono_literals;

class TestCoordinatorSessionStore final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void validUntilExpiry_data() { test::DatabaseBackends::addRows(); }
    void validUntilExpiry();
    void revokedSessionsEnd_data() { test::DatabaseBackends::addRows(); }
    void revokedSessionsEnd();
    void heartbeatManyRecordsValidAndNamesTheRest_data() { test::DatabaseBackends::addRows(); }
    void heartbeatManyRecordsValidAndNamesTheRest();
    void purgeDropsOnlyDeadSessions_data() { test::DatabaseBackends::addRows(); }
    void purgeDropsOnlyDeadSessions();
    void refusesUnknownNodesAndDuplicates_data() { test::DatabaseBackends::addRows(); }
    void refusesUnknownNodesAndDuplicates();
};

void TestCoordinatorSessionStore::validUntilExpiry() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    SessionStore sessions(*db);
    Status s = sessions.create(QStringLiteral("hash-1"), QStringLiteral("n1"), 1000, 60s);
    QVERIFY2(s, failure(s));

    Result<std::optional<SessionRecord>> found = sessions.findValid(QStringLiteral("hash-1"), 2000);
    QVERIFY2(found, failure(found));
    QVERIFY(found->has_value());
    QCOMPARE((*found)->nodeId, QStringLiteral("n1"));
    QCOMPARE((*found)->createdAtMs, qint64(1000));
    QCOMPARE((*found)->expiresAtMs, qint64(61000));
    QCOMPARE((*found)->lastHeartbeatMs, qint64(1000));
    QCOMPARE((*found)->revoked, false);

    Result<bool> beat = sessions.heartbeat(QStringLiteral("hash-1"), 30000);
    QVERIFY2(beat, failure(beat));
    QVERIFY(*beat);
    QCOMPARE(sessions.findValid(QStringLiteral("hash-1"), 30000).value()->lastHeartbeatMs, qint64(30000));

    // Expired at its expiry time, not a millisecond later.
    QVERIFY(sessions.findValid(QStringLiteral("hash-1"), 60999).value().has_value());
    QVERIFY(!sessions.findValid(QStringLiteral("hash-1"), 61000).value().has_value());
    beat = sessions.heartbeat(QStringLiteral("hash-1"), 61000);
    QVERIFY2(beat, failure(beat));
    QVERIFY(!*beat);

    QVERIFY(!sessions.findValid(QStringLiteral("hash-unknown"), 2000).value().has_value());
}

void TestCoordinatorSessionStore::revokedSessionsEnd() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n2")));
    SessionStore sessions(*db);
    QVERIFY(sessions.create(QStringLiteral("a"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("b"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("c"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("d"), QStringLiteral("n2"), 0, 1h));

    Status s = sessions.revoke(QStringLiteral("a"));
    QVERIFY2(s, failure(s));
    QVERIFY(!sessions.findValid(QStringLiteral("a"), 1).value().has_value());
    QCOMPARE(sessions.heartbeat(QStringLiteral("a"), 1).value(), false);
    QVERIFY(!sessions.revoke(QStringLiteral("nope")));
    // Revoked while its node holds newer valid sessions (admitted again): told "replaced". n2 holds
    // none besides its own, and a session past its expiry is not one.
    QCOMPARE(sessions.hasOtherValid(QStringLiteral("n1"), QStringLiteral("a"), 1).value(), true);
    QCOMPARE(sessions.hasOtherValid(QStringLiteral("n2"), QStringLiteral("d"), 1).value(), false);
    QCOMPARE(sessions.hasOtherValid(QStringLiteral("n1"), QStringLiteral("a"), 3'600'001).value(), false);

    // A banned node loses every live session at once; other nodes keep theirs.
    Result<int> revoked = sessions.revokeNode(QStringLiteral("n1"));
    QVERIFY2(revoked, failure(revoked));
    QCOMPARE(*revoked, 2);
    QVERIFY(!sessions.findValid(QStringLiteral("b"), 1).value().has_value());
    QVERIFY(!sessions.findValid(QStringLiteral("c"), 1).value().has_value());
    QVERIFY(sessions.findValid(QStringLiteral("d"), 1).value().has_value());
}

void TestCoordinatorSessionStore::purgeDropsOnlyDeadSessions() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    SessionStore sessions(*db);
    QVERIFY(sessions.create(QStringLiteral("expired"), QStringLiteral("n1"), 0, 10s));
    QVERIFY(sessions.create(QStringLiteral("revoked"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.create(QStringLiteral("live"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(sessions.revoke(QStringLiteral("revoked")));

    Result<int> purged = sessions.purge(10'000);
    QVERIFY2(purged, failure(purged));
    QCOMPARE(*purged, 2);
    QVERIFY(sessions.findValid(QStringLiteral("live"), 10'000).value().has_value());
    QCOMPARE(sessions.purge(10'000).valueOr(-1), 0);
}

void TestCoordinatorSessionStore::refusesUnknownNodesAndDuplicates() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    SessionStore sessions(*db);
    // The foreign key holds on SQLite too (PRAGMA foreign_keys).
    Status s = sessions.create(QStringLiteral("h"), QStringLiteral("ghost"), 0, 1h);
    QVERIFY(!s);
    QVERIFY2(QString::fromStdString(s.message()).contains(QStringLiteral("FOREIGN KEY"), Qt::CaseInsensitive),
             s.message().c_str());

    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    QVERIFY(sessions.create(QStringLiteral("h"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(!sessions.create(QStringLiteral("h"), QStringLiteral("n1"), 0, 1h));
    QVERIFY(!sessions.create(QStringLiteral("h2"), QStringLiteral("n1"), 0, 0ms));
}

// The session API's batched flush: 1,200 sessions (over two IN-list chunks) in one call; the
// valid ones get the time, the revoked, expired and unknown ones come back by name; nodes'
// last_seen moves in one call too.
void TestCoordinatorSessionStore::heartbeatManyRecordsValidAndNamesTheRest() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n2")));
    SessionStore sessions(*db);
    QStringList hashes;
    const Status created = db->writeTransaction([&]() -> Status {
        for (int i = 0; i < 1200; ++i) {
            hashes << QStringLiteral("h%1").arg(i);
            if (Status s = sessions.create(hashes.last(), i % 2 ? QStringLiteral("n1") : QStringLiteral("n2"),
                                           0, i == 7 ? 1s : 1h);
                !s)
                return s;
        }
        return {};
    });
    QVERIFY2(created, failure(created));
    QVERIFY(sessions.revoke(QStringLiteral("h1100")));
    Result<QStringList> ended = sessions.heartbeatMany(hashes + QStringList{QStringLiteral("unknown")}, 5000);
    QVERIFY2(ended, failure(ended));
    QStringList sorted = *ended;
    sorted.sort();
    QCOMPARE(sorted, (QStringList{QStringLiteral("h1100"), QStringLiteral("h7"), QStringLiteral("unknown")}));
    QCOMPARE(sessions.findValid(QStringLiteral("h0"), 5000).value()->lastHeartbeatMs, qint64(5000));
    QCOMPARE(sessions.findValid(QStringLiteral("h1199"), 5000).value()->lastHeartbeatMs, qint64(5000));

    NodeRegistry nodes(*db);
    const Status touched =
        nodes.touchMany({QStringLiteral("n1"), QStringLiteral("n2"), QStringLiteral("gone")}, 6000);
    QVERIFY2(touched, failure(touched));
    QCOMPARE(nodes.find(QStringLiteral("n1")).value()->lastSeenMs, qint64(6000));
    QCOMPARE(nodes.find(QStringLiteral("n2")).value()->lastSeenMs, qint64(6000));
}

QTEST_GUILESS_MAIN(TestCoordinatorSessionStore)
#include "test_coordinator_session_store.moc"
