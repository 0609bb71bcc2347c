// SPDX-License-Identifier: Apache-2.0
// NonceStore on a real SQLite file and a real PostgreSQL server: a nonce is spent once, its record
// kept until it expires; two connections racing for it never both win.
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
        qWarning("spend failed: %s", r.message().c_str());
    return r ? std::optional<NonceVerdict>(*r) : std::nullopt;
}

using V = std::optional<NonceVerdict>;

} // namespace

class TestCoordinatorNonceStore final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void spentOnce_data() { test::DatabaseBackends::addRows(); }
    void spentOnce();
    void purgeDropsExpired_data() { test::DatabaseBackends::addRows(); }
    void purgeDropsExpired();
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
    QCOMPARE(verdict(nonces.spend(QStringLiteral("n-1"), QStringLiteral("key-a"), 30'000)),
             V(NonceVerdict::Spent));
    QCOMPARE(verdict(nonces.spend(QStringLiteral("n-1"), QStringLiteral("key-a"), 30'000)),
             V(NonceVerdict::Replayed));
    // The nonce is the record's identity: spent by another key, it is still spent.
    QCOMPARE(verdict(nonces.spend(QStringLiteral("n-1"), QStringLiteral("key-b"), 30'000)),
             V(NonceVerdict::Replayed));
    QVERIFY(nonceRefusalText(NonceVerdict::Replayed).find("already used") != std::string::npos);
    QCOMPARE(verdict(nonces.spend(QStringLiteral("n-2"), QStringLiteral("key-a"), 30'000)),
             V(NonceVerdict::Spent));
}

void TestCoordinatorNonceStore::purgeDropsExpired() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NonceStore nonces(*db);
    QVERIFY(nonces.spend(QStringLiteral("old"), QStringLiteral("k"), 1000));
    QVERIFY(nonces.spend(QStringLiteral("older"), QStringLiteral("k"), 500));
    QVERIFY(nonces.spend(QStringLiteral("fresh"), QStringLiteral("k"), 10'000));

    Result<int> purged = nonces.purge(1000);
    QVERIFY2(purged, failure(purged));
    QCOMPARE(*purged, 2);
    // Kept until it expires: a replay of it is still refused.
    QCOMPARE(verdict(nonces.spend(QStringLiteral("fresh"), QStringLiteral("k"), 10'000)),
             V(NonceVerdict::Replayed));
}

void TestCoordinatorNonceStore::racingConnectionsExactlyOneWins() {
    const QString url = freshUrl();
    std::unique_ptr<Database> db = open(url);
    if (!db)
        return;
    constexpr int kNonces = 25;

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
                NonceStore(**mine).spend(QStringLiteral("race-%1").arg(i), QStringLiteral("key"), 3'600'000);
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
    db->close();
    Result<NonceVerdict> v = nonces.spend(QStringLiteral("n"), QStringLiteral("k"), 1);
    QVERIFY(!v);
    QVERIFY(!v.message().empty());
}

QTEST_GUILESS_MAIN(TestCoordinatorNonceStore)
#include "test_coordinator_nonce_store.moc"
