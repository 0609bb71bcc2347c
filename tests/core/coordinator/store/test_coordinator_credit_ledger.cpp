// SPDX-License-Identifier: Apache-2.0
// CreditLedger on a real SQLite file and a real PostgreSQL server: receipts are numbered and
// hash-chained per node, a write that never commits leaves nothing behind, tampering is found,
// and two connections appending at once still build one unbroken chain.
#include "DatabaseBackends.h"
#include "common/Sql.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"

#include <QCryptographicHash>
#include <QTest>

#include <array>
#include <thread>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;

namespace {

// Stands in for the coordinator's Ed25519 key: deterministic, so the test can recompute it.
Result<QByteArray> fakeSign(const QByteArray& payload) {
    return QCryptographicHash::hash(QByteArray("test-key:" + payload), QCryptographicHash::Sha256);
}

} // namespace

class TestCoordinatorCreditLedger final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void receiptsChainPerNode_data() { test::DatabaseBackends::addRows(); }
    void receiptsChainPerNode();
    void failedSigningWritesNothing_data() { test::DatabaseBackends::addRows(); }
    void failedSigningWritesNothing();
    void uncommittedWriteLeavesNoReceipt_data() { test::DatabaseBackends::addRows(); }
    void uncommittedWriteLeavesNoReceipt();
    void tamperingBreaksTheChain_data() { test::DatabaseBackends::addRows(); }
    void tamperingBreaksTheChain();
    void concurrentAppendsKeepOneChain_data() { test::DatabaseBackends::addRows(); }
    void concurrentAppendsKeepOneChain();
};

void TestCoordinatorCreditLedger::receiptsChainPerNode() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n2")));
    CreditLedger ledger(*db);

    // 6·N·T FLOP for a stage of the 8B model: 1.2e9 params, 16k tokens, 1.2e14 FLOP.
    const qint64 flop = 6LL * 1'200'000'000 * 16'384;
    std::vector<CreditReceipt> made;
    for (int i = 0; i < 3; ++i) {
        Result<CreditReceipt> r = ledger.append(QStringLiteral("n1"), 1000 + i, flop,
                                                flop / protocol::kFlopPerMicroCredit, fakeSign);
        QVERIFY2(r, failure(r));
        made.push_back(*r);
    }
    QCOMPARE(made[0].seq, qint64(1));
    QCOMPARE(made[1].seq, qint64(2));
    QCOMPARE(made[2].seq, qint64(3));
    QCOMPARE(made[0].prevHash, kGenesisHash);
    QCOMPARE(made[1].prevHash, made[0].hash);
    QCOMPARE(made[2].prevHash, made[1].hash);

    // Another node's chain starts at its own genesis.
    Result<CreditReceipt> other = ledger.append(QStringLiteral("n2"), 5000, 10, 0, fakeSign);
    QVERIFY2(other, failure(other));
    QCOMPARE(other->seq, qint64(1));
    QCOMPARE(other->prevHash, kGenesisHash);

    Result<std::vector<CreditReceipt>> listed = ledger.list(QStringLiteral("n1"));
    QVERIFY2(listed, failure(listed));
    QCOMPARE(listed->size(), std::size_t(3));
    for (std::size_t i = 0; i < 3; ++i) {
        const CreditReceipt& r = (*listed)[i];
        QCOMPARE(r.seq, made[i].seq);
        QCOMPARE(r.issuedAtMs, qint64(1000 + i));
        QCOMPARE(r.flop, flop);
        QCOMPARE(r.microCredits, flop / protocol::kFlopPerMicroCredit);
        QCOMPARE(r.prevHash, made[i].prevHash);
        QCOMPARE(r.hash, r.computeHash());
        QCOMPARE(r.hash.size(), 64);
        QCOMPARE(r.signature, fakeSign(r.payload()).value());
    }
    Result<std::vector<CreditReceipt>> after = ledger.list(QStringLiteral("n1"), 1);
    QVERIFY(after);
    QCOMPARE(after->size(), std::size_t(2));
    QCOMPARE(after->front().seq, qint64(2));
    QCOMPARE(ledger.list(QStringLiteral("n1"), 0, 1).value().size(), std::size_t(1));

    Result<CreditTotals> totals = ledger.totals(QStringLiteral("n1"));
    QVERIFY2(totals, failure(totals));
    QCOMPARE(totals->receipts, qint64(3));
    QCOMPARE(totals->microCredits, 3 * (flop / protocol::kFlopPerMicroCredit));
    QCOMPARE(totals->lastSeq, qint64(3));
    QCOMPARE(ledger.totals(QStringLiteral("nobody")).value().receipts, qint64(0));

    Status chain = ledger.verifyChain(QStringLiteral("n1"));
    QVERIFY2(chain, failure(chain));
}

void TestCoordinatorCreditLedger::failedSigningWritesNothing() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    CreditLedger ledger(*db);
    Result<CreditReceipt> r = ledger.append(QStringLiteral("n1"), 1, 100, 1, [](const QByteArray&) {
        return Result<QByteArray>(makeError("key locked"));
    });
    QVERIFY(!r);
    QCOMPARE(r.message(), std::string("cannot sign credit receipt: key locked"));
    QCOMPARE(ledger.totals(QStringLiteral("n1")).value().receipts, qint64(0));

    r = ledger.append(QStringLiteral("ghost"), 1, 100, 1, fakeSign);
    QVERIFY(!r);
    QCOMPARE(r.message(), std::string("unknown node ghost"));
    QVERIFY(!ledger.append(QStringLiteral("n1"), 1, -5, 0, fakeSign));

    r = ledger.append(QStringLiteral("n1"), 2, 100, 1, fakeSign);
    QVERIFY2(r, failure(r));
    QCOMPARE(r->seq, qint64(1));
}

void TestCoordinatorCreditLedger::uncommittedWriteLeavesNoReceipt() {
    const QString url = freshUrl();
    std::unique_ptr<Database> db = open(url);
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    Result<CreditReceipt> first = CreditLedger(*db).append(QStringLiteral("n1"), 1, 100, 1, fakeSign);
    QVERIFY2(first, failure(first));
    db.reset();

    {
        // A coordinator killed mid-append: its transaction began and inserted, then the
        // connection went away without COMMIT.
        std::unique_ptr<Database> dying = open(url);
        QVERIFY(dying);
        const QSqlDatabase c = dying->connection();
        QVERIFY(sql::exec(c, QStringLiteral("BEGIN")));
        Result<QSqlQuery> insert = sql::exec(
            c,
            QStringLiteral("INSERT INTO credit_receipts (node_id, seq, issued_at, flop, micro_credits, "
                           "prev_hash, hash, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
            {QStringLiteral("n1"), qint64(2), qint64(2), qint64(100), qint64(1), first->hash,
             QStringLiteral("half-written"), QStringLiteral("c2ln")});
        QVERIFY2(insert, failure(insert));
    }

    db = open(url);
    QVERIFY(db);
    CreditLedger ledger(*db);
    QCOMPARE(ledger.totals(QStringLiteral("n1")).value().receipts, qint64(1));
    Status chain = ledger.verifyChain(QStringLiteral("n1"));
    QVERIFY2(chain, failure(chain));
    Result<CreditReceipt> next = ledger.append(QStringLiteral("n1"), 3, 100, 1, fakeSign);
    QVERIFY2(next, failure(next));
    QCOMPARE(next->seq, qint64(2));
    QCOMPARE(next->prevHash, first->hash);
}

void TestCoordinatorCreditLedger::tamperingBreaksTheChain() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    CreditLedger ledger(*db);
    for (int i = 0; i < 3; ++i)
        QVERIFY(ledger.append(QStringLiteral("n1"), i, 1000, 10, fakeSign));
    QVERIFY(sql::exec(
        db->connection(),
        QStringLiteral("UPDATE credit_receipts SET micro_credits = ? WHERE node_id = ? AND seq = ?"),
        {qint64(1'000'000), QStringLiteral("n1"), qint64(2)}));
    Status chain = ledger.verifyChain(QStringLiteral("n1"));
    QVERIFY(!chain);
    QCOMPARE(chain.message(), std::string("credit receipt 2 of n1: hash does not match its contents"));
}

void TestCoordinatorCreditLedger::concurrentAppendsKeepOneChain() {
    const QString url = freshUrl();
    std::unique_ptr<Database> db = open(url);
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));

    // Two connections on two threads append to one node's chain at the same time.
    constexpr int kEach = 10;
    std::array<std::string, 2> errors;
    const QString dataDir = backends().dir().path();
    const auto appender = [&](int w) {
        Result<std::unique_ptr<Database>> mine = Database::open(url, dataDir);
        if (!mine) {
            errors[w] = mine.message();
            return;
        }
        CreditLedger ledger(**mine);
        for (int i = 0; i < kEach && errors[w].empty(); ++i) {
            Result<CreditReceipt> r = ledger.append(QStringLiteral("n1"), w * 100 + i, 1000, 1, fakeSign);
            if (!r)
                errors[w] = r.message();
        }
    };
    std::thread first(appender, 0);
    std::thread second(appender, 1);
    first.join();
    second.join();
    QVERIFY2(errors[0].empty(), errors[0].c_str());
    QVERIFY2(errors[1].empty(), errors[1].c_str());

    CreditLedger ledger(*db);
    Result<CreditTotals> totals = ledger.totals(QStringLiteral("n1"));
    QVERIFY2(totals, failure(totals));
    QCOMPARE(totals->receipts, qint64(2 * kEach));
    QCOMPARE(totals->lastSeq, qint64(2 * kEach));
    QCOMPARE(totals->microCredits, qint64(2 * kEach));
    Status chain = ledger.verifyChain(QStringLiteral("n1"));
    QVERIFY2(chain, failure(chain));
}

QTEST_GUILESS_MAIN(TestCoordinatorCreditLedger)
#include "test_coordinator_credit_ledger.moc"
