// NonceStore on a real SQLite file and a real PostgreSQL server: a nonce is spent once, by the
// key it was issued to, before it expires; two connections racing for it never both win.
#include "DatabaseBackends.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NonceStore.h"

#include <QTest>

#include <array>
#include <barrier>
#include <optional>
#include <thread>
#include <vector>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;
using namespace std::chrono_literals;

namespace {

// The verdict; nothing when the database failed.
std::optional<NonceVerdict> verdict(const Result<NonceVerdict>& r) {
    if (!r)
        qWarning("consume failed: %s", r.message().c_str());
    return r ? std::optional<NonceVerdict>(*r) : std::nullopt;
}

using V = std::optional<NonceVerdict>;

} // namespace

class TestCoordinatorNonceStore final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void spentOnce_data() { test::DatabaseBackends::addRows(); }
    void spentOnce();
    void expiredNonceFails_data() { test::DatabaseBackends::addRows(); }
    void expiredNonceFails();
    void boundToItsKey_data() { test::DatabaseBackends::addRows(); }
    void boundToItsKey();
    void purgeDropsSpentAndExpired_data() { test::DatabaseBackends::addRows(); }
    void purgeDropsSpentAndExpired();
    void racingConnectionsExactlyOneWins_data() { test::DatabaseBackends::addRows(); }
    void racingConnectionsExactlyOneWins();
    void databaseFailureIsAnErrorNotARefusal_data() { test::DatabaseBackends::addRows(); }
    void databaseFailureIsAnErrorNotARefusal();
};

void TestCoordinatorNonceStore::spentOnce() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NonceStore nonces(*db);
    Status s = nonces.issue(QStringLiteral("n-1"), QStringLiteral("key-a"), 1000, 30s);
    QVERIFY2(s, failure(s));
    QVERIFY(!nonces.issue(QStringLiteral("n-1"), QStringLiteral("key-a"), 1000, 30s)); // never reissued

    QCOMPARE(verdict(nonces.consume(QStringLiteral("n-1"), QStringLiteral("key-a"), 2000)),
             V(NonceVerdict::Spent));
    QCOMPARE(verdict(nonces.consume(QStringLiteral("n-1"), QStringLiteral("key-a"), 2001)),
             V(NonceVerdict::Replayed));
    QVERIFY(nonceRefusalText(NonceVerdict::Replayed).find("already used") != std::string::npos);
    QCOMPARE(verdict(nonces.consume(QStringLiteral("never-issued"), QStringLiteral("key-a"), 2000)),
             V(NonceVerdict::Unknown));
    QVERIFY(nonceRefusalText(NonceVerdict::Unknown).find("unknown admission nonce") != std::string::npos);
}

void TestCoordinatorNonceStore::expiredNonceFails() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NonceStore nonces(*db);
    QVERIFY(nonces.issue(QStringLiteral("late"), QStringLiteral("key"), 0, 1000ms));
    QVERIFY(nonces.issue(QStringLiteral("in-time"), QStringLiteral("key"), 0, 1000ms));

    QCOMPARE(verdict(nonces.consume(QStringLiteral("late"), QStringLiteral("key"), 1000)),
             V(NonceVerdict::Expired));
    QCOMPARE(verdict(nonces.consume(QStringLiteral("in-time"), QStringLiteral("key"), 999)),
             V(NonceVerdict::Spent));
}

void TestCoordinatorNonceStore::boundToItsKey() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NonceStore nonces(*db);
    QVERIFY(nonces.issue(QStringLiteral("n"), QStringLiteral("key-a"), 0, 30s));
    QCOMPARE(verdict(nonces.consume(QStringLiteral("n"), QStringLiteral("key-b"), 1)),
             V(NonceVerdict::ForeignKey));
    // Someone else's attempt does not burn it for its owner.
    QCOMPARE(verdict(nonces.consume(QStringLiteral("n"), QStringLiteral("key-a"), 2)),
             V(NonceVerdict::Spent));
}

void TestCoordinatorNonceStore::purgeDropsSpentAndExpired() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NonceStore nonces(*db);
    QVERIFY(nonces.issue(QStringLiteral("spent"), QStringLiteral("k"), 0, 1h));
    QVERIFY(nonces.issue(QStringLiteral("expired"), QStringLiteral("k"), 0, 1s));
    QVERIFY(nonces.issue(QStringLiteral("fresh"), QStringLiteral("k"), 0, 1h));
    QCOMPARE(verdict(nonces.consume(QStringLiteral("spent"), QStringLiteral("k"), 10)),
             V(NonceVerdict::Spent));

    Result<int> purged = nonces.purge(5000);
    QVERIFY2(purged, failure(purged));
    QCOMPARE(*purged, 2);
    QCOMPARE(verdict(nonces.consume(QStringLiteral("fresh"), QStringLiteral("k"), 5000)),
             V(NonceVerdict::Spent));
}

void TestCoordinatorNonceStore::racingConnectionsExactlyOneWins() {
    const QString url = freshUrl();
    std::unique_ptr<Database> db = open(url);
    if (!db)
        return;
    constexpr int kNonces = 25;
    NonceStore nonces(*db);
    for (int i = 0; i < kNonces; ++i)
        QVERIFY(nonces.issue(QStringLiteral("race-%1").arg(i), QStringLiteral("key"), 0, 1h));

    // Each racer has its own connection on its own thread, as two coordinator processes on one
    // database would; both are released at once for every nonce.
    std::barrier start(2);
    std::array<std::vector<bool>, 2> won;
    std::array<std::string, 2> errors;
    const QString dataDir = backends().dir().path();
    const auto racer = [&](int r) {
        Result<std::unique_ptr<Database>> mine = Database::open(url, dataDir);
        if (!mine)
            errors[r] = mine.message();
        for (int i = 0; i < kNonces; ++i) {
            start.arrive_and_wait();
            if (!mine)
                continue;
            Result<NonceVerdict> v =
                NonceStore(**mine).consume(QStringLiteral("race-%1").arg(i), QStringLiteral("key"), 1);
            won[r].push_back(v && *v == NonceVerdict::Spent);
            if (!v)
                errors[r] = v.message(); // a lock timeout or SQL error is not a fair loss
            else if (*v != NonceVerdict::Spent && *v != NonceVerdict::Replayed)
                errors[r] = nonceRefusalText(*v);
        }
    };
    std::thread first(racer, 0);
    std::thread second(racer, 1);
    first.join();
    second.join();

    QVERIFY2(errors[0].empty(), errors[0].c_str());
    QVERIFY2(errors[1].empty(), errors[1].c_str());
    QCOMPARE(int(won[0].size()), kNonces);
    QCOMPARE(int(won[1].size()), kNonces);
    for (int i = 0; i < kNonces; ++i)
        QVERIFY2(won[0][i] != won[1][i], qPrintable(QStringLiteral("race-%1").arg(i)));
}

void TestCoordinatorNonceStore::databaseFailureIsAnErrorNotARefusal() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NonceStore nonces(*db);
    QVERIFY(nonces.issue(QStringLiteral("n"), QStringLiteral("k"), 0, 1h));
    db->close();
    Result<NonceVerdict> v = nonces.consume(QStringLiteral("n"), QStringLiteral("k"), 1);
    QVERIFY(!v);
    QVERIFY(!v.message().empty());
}

QTEST_GUILESS_MAIN(TestCoordinatorNonceStore)
#include "test_coordinator_nonce_store.moc"
