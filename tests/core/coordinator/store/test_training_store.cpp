// SPDX-License-Identifier: Apache-2.0
// TrainingStore on a real SQLite file and a real PostgreSQL server: microbatches and their
// accepted work are written in one batch, a restart counts what was left in flight abandoned,
// and credit receipts carry exactly the FLOPs accepted, remainders included, across grants.
// Credit is in escrow: granted only past the cutoff and once an audit of the node covers the work;
// a failed audit forfeits what is pending, with its reason, and no later grant pays it.
#include "DatabaseBackends.h"
#include "common/Sql.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/TrainingStore.h"
#include "coordinator/trust/Reputation.h"

#include <QCryptographicHash>
#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;

namespace {

Result<QByteArray> fakeSign(const QByteArray& payload) {
    return QCryptographicHash::hash(QByteArray("test-key:" + payload), QCryptographicHash::Sha256);
}

// One microbatch's forward and backward through `stage`, both by `node`.
Microbatch microbatch(qint64 id, const QString& node, qint64 flop, double loss = 2.0, int stage = 1) {
    Microbatch mb;
    mb.id = id;
    mb.tokens = 512;
    mb.loss = loss;
    mb.accepted.push_back({node, stage, TaskKind::Forward, false, 512, flop / 3});
    mb.accepted.push_back({node, stage, TaskKind::Backward, false, 512, flop - flop / 3});
    return mb;
}

// The node's work accepted until `through` is covered by an audit it passed.
void audited(Database& db, const QString& node, qint64 through) {
    QVERIFY(Reputation(db).passedAudit(node, through, through));
}

qint64 scalar(Database& db, const QString& sql) {
    Result<std::optional<QVariant>> v = sql::scalar(db.connection(), sql);
    return v && *v ? (*v)->toLongLong() : -1;
}

} // namespace

class TestTrainingStore final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void restartCountsWhatWasInFlightAbandoned_data() { test::DatabaseBackends::addRows(); }
    void restartCountsWhatWasInFlightAbandoned();
    void creditsEqualAcceptedFlopsExactly_data() { test::DatabaseBackends::addRows(); }
    void creditsEqualAcceptedFlopsExactly();
    void unflushedWorkIsNeitherCountedNorCredited_data() { test::DatabaseBackends::addRows(); }
    void unflushedWorkIsNeitherCountedNorCredited();
    void creditWaitsForTheCutoffAndAnAudit_data() { test::DatabaseBackends::addRows(); }
    void creditWaitsForTheCutoffAndAnAudit();
    void aFirstStageBackwardIsCoveredByBackwardEvidenceAlone_data() { test::DatabaseBackends::addRows(); }
    void aFirstStageBackwardIsCoveredByBackwardEvidenceAlone();
    void aFailedAuditForfeitsWhatIsPending_data() { test::DatabaseBackends::addRows(); }
    void aFailedAuditForfeitsWhatIsPending();
};

void TestTrainingStore::restartCountsWhatWasInFlightAbandoned() {
    const QString url = backends().freshUrl();
    std::unique_ptr<Database> db = backends().open(url);
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    {
        TrainingStore store(*db);
        Result<TrainingState> fresh = store.resume(1000);
        QVERIFY2(fresh, failure(fresh));
        QCOMPARE(fresh->step, qint64(0));
        QCOMPARE(fresh->nextMicrobatch, qint64(1));
        for (qint64 id = 1; id <= 5; ++id)
            store.issued(id, 0, 512, 1000 + id);
        store.completed(microbatch(1, QStringLiteral("n1"), 3000), 1100);
        store.completed(microbatch(2, QStringLiteral("n1"), 3000), 1101);
        Microbatch lost = microbatch(3, QStringLiteral("n1"), 3000);
        lost.abandonReason = QStringLiteral("node gone");
        store.abandoned(lost, 1102);
        TrainingState state;
        state.tokens = 1024;
        state.joins = 2;
        state.leaves = 1;
        store.stepped(7, 2.5, state, 1103);
        Status flushed = store.flush();
        QVERIFY2(flushed, failure(flushed));
        QVERIFY(!store.hasPending());
    } // the process "dies" with microbatches 4 and 5 in flight

    TrainingStore store(*db);
    Result<TrainingState> resumed = store.resume(2000);
    QVERIFY2(resumed, failure(resumed));
    QCOMPARE(resumed->step, qint64(7));
    QCOMPARE(resumed->joins, qint64(2));
    QCOMPARE(resumed->leaves, qint64(1));
    QCOMPARE(resumed->abandonedAtStart, qint64(2));
    QCOMPARE(resumed->issued, qint64(5));
    QCOMPARE(resumed->completed, qint64(2));
    QCOMPARE(resumed->abandoned, qint64(3));
    QCOMPARE(resumed->completed + resumed->abandoned, resumed->issued);
    QCOMPARE(resumed->nextMicrobatch, qint64(6)); // ids stay unique across restarts
    QCOMPARE(resumed->tokens, qint64(1024));
    QCOMPARE(resumed->creditedFlop, qint64(6000));
    QCOMPARE(scalar(*db, QStringLiteral("SELECT COUNT(*) FROM microbatches WHERE state = 'in_flight'")),
             qint64(0));
    Result<std::vector<LossPoint>> history = store.lossHistory(10);
    QVERIFY2(history, failure(history));
    QCOMPARE(history->size(), std::size_t(1));
    QCOMPARE(history->front().loss, 2.5);
}

void TestTrainingStore::creditsEqualAcceptedFlopsExactly() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n2")));
    TrainingStore store(*db);
    QVERIFY(store.resume(0));
    // Amounts that are not multiples of 10^9 FLOP: the remainders must carry across receipts.
    const qint64 a = 1'700'000'001, b = 2'300'000'000, c = 999'999'999;
    qint64 id = 1;
    for (qint64 flop : {a, b, c}) {
        store.issued(id, 0, 512, 10);
        store.completed(microbatch(id, QStringLiteral("n1"), flop), 20);
        ++id;
        QVERIFY(store.flush());
        audited(*db, QStringLiteral("n1"), 25);
        Result<QStringList> granted = store.grantCredits(fakeSign, 30 + id, 30 + id);
        QVERIFY2(granted, failure(granted));
        QCOMPARE(*granted, QStringList{QStringLiteral("n1")});
    }
    store.issued(id, 0, 512, 10);
    store.completed(microbatch(id, QStringLiteral("n2"), 5), 20);
    QVERIFY(store.flush());
    audited(*db, QStringLiteral("n2"), 25);
    QVERIFY(store.grantCredits(fakeSign, 99, 99));
    // Nothing pending: a second grant makes no receipt.
    Result<QStringList> again = store.grantCredits(fakeSign, 100, 100);
    QVERIFY(again);
    QVERIFY(again->isEmpty());

    QCOMPARE(scalar(*db, QStringLiteral("SELECT SUM(flop) FROM accepted_tasks")), a + b + c + 5);
    QCOMPARE(scalar(*db, QStringLiteral("SELECT SUM(flop) FROM credit_receipts")), a + b + c + 5);
    QCOMPARE(scalar(*db, QStringLiteral("SELECT SUM(flop) FROM credit_pending")), qint64(0));
    QCOMPARE(
        scalar(*db, QStringLiteral("SELECT SUM(micro_credits) FROM credit_receipts WHERE node_id = 'n1'")),
        (a + b + c) / protocol::kFlopPerMicroCredit);
    QCOMPARE(scalar(*db, QStringLiteral("SELECT COUNT(*) FROM credit_receipts WHERE node_id = 'n1'")),
             qint64(3));
    QCOMPARE(
        scalar(*db, QStringLiteral("SELECT SUM(micro_credits) FROM credit_receipts WHERE node_id = 'n2'")),
        qint64(0));
    Status chain = CreditLedger(*db).verifyChain(QStringLiteral("n1"));
    QVERIFY2(chain, failure(chain));
}

void TestTrainingStore::unflushedWorkIsNeitherCountedNorCredited() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    {
        TrainingStore store(*db);
        QVERIFY(store.resume(0));
        store.issued(1, 0, 512, 10);
        QVERIFY(store.flush());
        store.completed(microbatch(1, QStringLiteral("n1"), 4000), 20);
        QVERIFY(store.hasPending());
    } // dies before the flush: the completion and its credit are lost together
    TrainingStore store(*db);
    Result<TrainingState> resumed = store.resume(100);
    QVERIFY(resumed);
    QCOMPARE(resumed->abandoned, qint64(1));
    QCOMPARE(resumed->completed, qint64(0));
    QCOMPARE(resumed->creditedFlop, qint64(0));
    audited(*db, QStringLiteral("n1"), 150);
    Result<QStringList> granted = store.grantCredits(fakeSign, 200, 200);
    QVERIFY(granted);
    QVERIFY(granted->isEmpty());
}

void TestTrainingStore::creditWaitsForTheCutoffAndAnAudit() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    TrainingStore store(*db);
    QVERIFY(store.resume(0));
    store.issued(1, 0, 512, 10);
    store.completed(microbatch(1, QStringLiteral("n1"), 3'000'000'000), 100);
    QVERIFY(store.flush());
    // Past the cutoff but no audit since: pending.
    Result<QStringList> granted = store.grantCredits(fakeSign, 1000, 500);
    QVERIFY2(granted, failure(granted));
    QVERIFY(granted->isEmpty());
    // An audit that covers work until 99 does not cover work accepted at 100.
    audited(*db, QStringLiteral("n1"), 99);
    QVERIFY(store.grantCredits(fakeSign, 1001, 500)->isEmpty());
    // An audit that judged forwards only releases nothing while backward work is pending: an honest
    // forward does not vouch for a lying gradient, and a liar that flips only its gradients was paid
    // for its forwards before an audit judged one of its backwards (test_dishonest_nodes, in CI).
    QVERIFY(Reputation(*db).passedAudit(QStringLiteral("n1"), 300, 300, true, false));
    QVERIFY(store.grantCredits(fakeSign, 1001, 500)->isEmpty());
    // The other kind judged too: all of it leaves escrow.
    QVERIFY(Reputation(*db).passedAudit(QStringLiteral("n1"), 300, 300, false, true));
    QCOMPARE(*store.grantCredits(fakeSign, 1001, 500), QStringList{QStringLiteral("n1")});
    QCOMPARE(scalar(*db, QStringLiteral("SELECT SUM(flop) FROM credit_receipts")), qint64(3'000'000'000));
    store.issued(2, 0, 512, 10);
    store.completed(microbatch(2, QStringLiteral("n1"), 3'000'000'000), 400);
    QVERIFY(store.flush());
    // Covered, but the escrow time has not passed (cutoff before the acceptance): pending.
    audited(*db, QStringLiteral("n1"), 600);
    QVERIFY(store.grantCredits(fakeSign, 1002, 350)->isEmpty());
    Result<CreditEscrow> escrow = store.escrow(QStringLiteral("n1"));
    QVERIFY2(escrow, failure(escrow));
    QCOMPARE(escrow->pendingFlop, qint64(3'000'000'000));
    // Both: granted, exactly once.
    granted = store.grantCredits(fakeSign, 1003, 500);
    QVERIFY2(granted, failure(granted));
    QCOMPARE(*granted, QStringList{QStringLiteral("n1")});
    QCOMPARE(scalar(*db, QStringLiteral("SELECT SUM(flop) FROM credit_receipts")), qint64(6'000'000'000));
    QCOMPARE(store.escrow(QStringLiteral("n1"))->pendingFlop, qint64(0));
    QVERIFY(store.grantCredits(fakeSign, 1004, 500)->isEmpty());
}

void TestTrainingStore::aFirstStageBackwardIsCoveredByBackwardEvidenceAlone() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    TrainingStore store(*db);
    QVERIFY(store.resume(0));
    store.issued(1, 0, 512, 10);
    store.completed(microbatch(1, QStringLiteral("n1"), 3'000'000'000, 2.0, 0), 100);
    QVERIFY(store.flush());
    // Stage 0's backward returns no tensor: its forwards' checks do not vouch for it (a lazy node answered
    // them without computing and was paid that way) — only backward evidence does: its share's check passed
    // (Trainer::onShareChecked), or an audit where no other replica can check the share.
    QVERIFY(Reputation(*db).passedAudit(QStringLiteral("n1"), 300, 300, true, false));
    QVERIFY(store.grantCredits(fakeSign, 1001, 500)->isEmpty());
    QCOMPARE(scalar(*db, QStringLiteral("SELECT COUNT(*) FROM credit_receipts")), qint64(0));
    QVERIFY(Reputation(*db).passedAudit(QStringLiteral("n1"), 300, 300, false, true));
    QCOMPARE(*store.grantCredits(fakeSign, 1002, 500), QStringList{QStringLiteral("n1")});
    QCOMPARE(scalar(*db, QStringLiteral("SELECT SUM(flop) FROM credit_receipts")), qint64(3'000'000'000));
}

void TestTrainingStore::aFailedAuditForfeitsWhatIsPending() {
    std::unique_ptr<Database> db = backends().open(backends().freshUrl());
    if (!db)
        return;
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n1")));
    QVERIFY(test::admitTestNode(*db, QStringLiteral("n2")));
    TrainingStore store(*db);
    QVERIFY(store.resume(0));
    for (qint64 id = 1; id <= 3; ++id) {
        store.issued(id, 0, 512, 10);
        store.completed(microbatch(id, id == 3 ? QStringLiteral("n2") : QStringLiteral("n1"), 2'000'000'000),
                        100);
    }
    QVERIFY(store.flush());
    Result<qint64> lost = store.forfeit(QStringLiteral("n1"), QStringLiteral("failed an audit: noise"), 200);
    QVERIFY2(lost, failure(lost));
    QCOMPARE(*lost, qint64(4'000'000'000));
    Result<CreditEscrow> escrow = store.escrow(QStringLiteral("n1"));
    QVERIFY2(escrow, failure(escrow));
    QCOMPARE(escrow->pendingFlop, qint64(0));
    QCOMPARE(escrow->forfeitedFlop, qint64(4'000'000'000));
    QCOMPARE(escrow->lastForfeitReason, QStringLiteral("failed an audit: noise"));
    QCOMPARE(escrow->lastForfeitAtMs, qint64(200));
    // Covered and past the cutoff: n2 is paid, n1's forfeited work never is.
    audited(*db, QStringLiteral("n1"), 1000);
    audited(*db, QStringLiteral("n2"), 1000);
    Result<QStringList> granted = store.grantCredits(fakeSign, 2000, 1500);
    QVERIFY2(granted, failure(granted));
    QCOMPARE(*granted, QStringList{QStringLiteral("n2")});
    QCOMPARE(scalar(*db, QStringLiteral("SELECT COUNT(*) FROM credit_receipts WHERE node_id = 'n1'")),
             qint64(0));
    QCOMPARE(store.escrow(QStringLiteral("n2"))->forfeitedFlop, qint64(0));
}

QTEST_GUILESS_MAIN(TestTrainingStore)
#include "test_training_store.moc"
