// SPDX-License-Identifier: Apache-2.0
// Reputation on a real SQLite file and a real PostgreSQL server: a strike bans for a while and
// doubles; a failed audit bans for days and counts against the node's network; three banned
// nodes ban the network (a new key from it is refused, another network is not); bans are read
// back from the database by a fresh object, as after a restart; a passed audit covers the work
// accepted before it.
#include "DatabaseBackends.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/ReputationStore.h"
#include "coordinator/trust/Reputation.h"

#include <QHostAddress>
#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;

namespace {

Status admitFrom(Database& db, const QString& node, const QString& network) {
    NodeAdmission a{node, QStringLiteral("pk"), QStringLiteral("{}"), QStringLiteral("{}"),
                    QStringLiteral("0.2.0")};
    a.network = network;
    return NodeRegistry(db).admit(a, 0);
}

bool isBanned(Database& db, const QString& node, const QString& network, qint64 at) {
    Result<std::optional<QString>> b = Reputation(db).banned(node, network, at);
    return b && *b;
}

} // namespace

class TestReputation final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void networksAreSlash24AndSlash48();
    void strikesBanForAWhileAndDouble_data() { test::DatabaseBackends::addRows(); }
    void strikesBanForAWhileAndDouble();
    void threeFailedAuditsBanTheNetwork_data() { test::DatabaseBackends::addRows(); }
    void threeFailedAuditsBanTheNetwork(); // or struck-out keys
    void aPassedAuditCoversEarlierWork_data() { test::DatabaseBackends::addRows(); }
    void aPassedAuditCoversEarlierWork();
    void strikesDecayWithVerifiedWork_data() { test::DatabaseBackends::addRows(); }
    void strikesDecayWithVerifiedWork();
};

void TestReputation::networksAreSlash24AndSlash48() {
    QCOMPARE(Reputation::networkOf(QHostAddress(QStringLiteral("203.0.113.77"))), u"203.0.113.0/24"_qs);
    QCOMPARE(Reputation::networkOf(QHostAddress(QStringLiteral("::ffff:203.0.113.77"))),
             u"203.0.113.0/24"_qs);
    QCOMPARE(Reputation::networkOf(QHostAddress(QStringLiteral("2001:db8:1234:5678::1"))),
             u"2001:db8:1234::/48"_qs);
    QCOMPARE(Reputation::networkOf(QHostAddress()), QString());
}

void TestReputation::strikesBanForAWhileAndDouble() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(admitFrom(*db, QStringLiteral("n1"), QStringLiteral("10.0.0.0/24")));
    ReputationSettings settings;
    Reputation r(*db, settings);
    Result<qint64> first = r.strike(QStringLiteral("n1"), QStringLiteral("all zeros"), 1000);
    QVERIFY2(first, failure(first));
    QCOMPARE(*first, 1000 + settings.strikeBanMs);
    QVERIFY(isBanned(*db, QStringLiteral("n1"), {}, 1000 + settings.strikeBanMs - 1));
    QVERIFY(!isBanned(*db, QStringLiteral("n1"), {}, 1000 + settings.strikeBanMs));
    Result<qint64> second = r.strike(QStringLiteral("n1"), QStringLiteral("NaN"), 100'000);
    QCOMPARE(*second, 100'000 + 2 * settings.strikeBanMs);
    // Strikes do not count against the network: honest hardware fails sometimes.
    QVERIFY(!isBanned(*db, QStringLiteral("other"), QStringLiteral("10.0.0.0/24"), 100'000));
    Result<ReputationRecord> rec =
        ReputationStore(*db).get(ReputationStore::nodeSubject(QStringLiteral("n1")));
    QCOMPARE(rec->strikes, 2);
    QCOMPARE(rec->banReason, u"NaN"_qs);
}

void TestReputation::threeFailedAuditsBanTheNetwork() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    const QString net = QStringLiteral("198.51.100.0/24");
    for (const char* n : {"k1", "k2", "k3"})
        QVERIFY(admitFrom(*db, QLatin1String(n), net));
    const qint64 t = 5000;
    for (const char* n : {"k1", "k2"}) {
        Result<qint64> until = Reputation(*db).failedAudit(QLatin1String(n), QStringLiteral("noise"), t);
        QVERIFY2(until, failure(until));
        QCOMPARE(*until, t + ReputationSettings{}.auditBanMs);
    }
    // Two banned keys: the network still admits a new one.
    QVERIFY(!isBanned(*db, QStringLiteral("fresh"), net, t));
    // The third key is struck out on arrival (its results refused thrice) rather than audited: a liar
    // all the same, banned as long; struck out twice it is counted once.
    for (int again = 0; again < 2; ++again) {
        Result<qint64> out = Reputation(*db).struckOut(QStringLiteral("k3"), QStringLiteral("3 refused"), t);
        QVERIFY2(out, failure(out));
        QCOMPARE(*out, t + ReputationSettings{}.auditBanMs);
    }
    QCOMPARE(ReputationStore(*db).get(ReputationStore::networkSubject(net))->bannedNodes, 3);
    // A fresh object reads it back (a restarted coordinator): the third bans the network.
    Result<std::optional<QString>> reason = Reputation(*db).banned(QStringLiteral("fresh"), net, t + 1);
    QVERIFY2(reason && *reason, "the network is not banned");
    QVERIFY2((*reason)->contains(net), qPrintable(**reason));
    QVERIFY(!isBanned(*db, QStringLiteral("fresh"), QStringLiteral("192.0.2.0/24"), t + 1));
    QVERIFY(isBanned(*db, QStringLiteral("k1"), {}, t + 6 * 24 * 3'600'000LL));
}

void TestReputation::aPassedAuditCoversEarlierWork() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(admitFrom(*db, QStringLiteral("n1"), {}));
    QVERIFY(Reputation(*db).passedAudit(QStringLiteral("n1"), 700, 800));
    QVERIFY(Reputation(*db).passedAudit(QStringLiteral("n1"), 500, 900)); // an older one moves nothing back
    Result<ReputationRecord> rec =
        ReputationStore(*db).get(ReputationStore::nodeSubject(QStringLiteral("n1")));
    QVERIFY2(rec, failure(rec));
    QCOMPARE(rec->auditsPassed, 2);
    QCOMPARE(rec->auditedThroughMs, qint64(700));
    QCOMPARE(rec->backwardAuditedThroughMs, qint64(700));
    // An audit that judged only forwards covers only forwards.
    QVERIFY(Reputation(*db).passedAudit(QStringLiteral("n1"), 1000, 1100, true, false));
    rec = ReputationStore(*db).get(ReputationStore::nodeSubject(QStringLiteral("n1")));
    QVERIFY2(rec, failure(rec));
    QCOMPARE(rec->auditedThroughMs, qint64(1000));
    QCOMPARE(rec->backwardAuditedThroughMs, qint64(700));
}

// A check passed on work done after a strike's ban forgives that strike, one per check and each on newer
// work; work from before the ban ended (what the strike judged) forgives nothing.
void TestReputation::strikesDecayWithVerifiedWork() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(admitFrom(*db, QStringLiteral("n1"), {}));
    ReputationSettings settings;
    Reputation r(*db, settings);
    const auto strikes = [&] {
        return ReputationStore(*db).get(ReputationStore::nodeSubject(QStringLiteral("n1")))->strikes;
    };
    QVERIFY(r.strike(QStringLiteral("n1"), QStringLiteral("a token's RMS is 2e+04"), 1000));
    QVERIFY(r.strike(QStringLiteral("n1"), QStringLiteral("a token's RMS is 3e+04"), 2000));
    const qint64 banEnd = 2000 + 2 * settings.strikeBanMs;
    QCOMPARE(strikes(), 2);
    QVERIFY(r.passedAudit(QStringLiteral("n1"), banEnd - 1, banEnd + 10)); // work from within the ban
    QCOMPARE(strikes(), 2);
    QVERIFY(r.passedAudit(QStringLiteral("n1"), banEnd + 100, banEnd + 200));
    QCOMPARE(strikes(), 1);
    QVERIFY(r.passedAudit(QStringLiteral("n1"), banEnd + 100, banEnd + 300)); // the same work again
    QCOMPARE(strikes(), 1);
    QVERIFY(r.cover(QStringLiteral("n1"), banEnd + 500, banEnd + 600)); // time alone (checks off): nothing
    QCOMPARE(strikes(), 1);
    QVERIFY(r.passedAudit(QStringLiteral("n1"), banEnd + 400, banEnd + 700));
    QCOMPARE(strikes(), 0);
    // A new strike after forgiven ones bans for the first strike's time again.
    Result<qint64> next = r.strike(QStringLiteral("n1"), QStringLiteral("loss 60"), banEnd + 800);
    QVERIFY(next);
    QCOMPARE(*next, banEnd + 800 + settings.strikeBanMs);
}

QTEST_GUILESS_MAIN(TestReputation)
#include "test_reputation.moc"
