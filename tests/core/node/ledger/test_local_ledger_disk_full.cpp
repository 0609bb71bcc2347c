// SPDX-License-Identifier: Apache-2.0
// LocalLedger on a disk that is full (a real tmpfs, ENOSPC).
//
// Tried: the ledger's disk fills up (another program takes every free byte) while the coordinator
// keeps sending pages of receipts. What a user notices: the node logs that it cannot store the
// receipts because the disk is full; every receipt it had acknowledged before is still in the
// ledger and the chain verifies; once space returns, the next poll (after the last stored number)
// stores the rest, and nothing is lost or stored twice.
#include "ReceiptChain.h"
#include "SmallFilesystem.h"
#include "common/Identity.h"
#include "node/ledger/LocalLedger.h"

#include <QCoreApplication>
#include <QTest>

using namespace tessera;
using namespace tessera::node;
using test::ReceiptChain;

class TestLocalLedgerDiskFull final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aFullDiskRefusesAPageAndLosesNothingAcknowledged();
};

void TestLocalLedgerDiskFull::aFullDiskRefusesAPageAndLosesNothingAcknowledged() {
    test::SmallFilesystem fs;
    const Status mounted = fs.mount(8 << 20);
    QVERIFY2(mounted, mounted ? "" : mounted.message().c_str());
    Result<Identity> key = Identity::generate();
    QVERIFY(key);
    const QString node = QStringLiteral("node-full");
    const QString path = fs.path() + QStringLiteral("/ledger.sqlite");
    Result<std::unique_ptr<LocalLedger>> ledger = LocalLedger::open(path, node, key->publicKey());
    QVERIFY2(ledger, ledger ? "" : ledger.message().c_str());
    ReceiptChain chain(*key, node);

    // Acknowledged while there is room.
    qint64 acknowledged = 0;
    for (int page = 0; page < 3; ++page) {
        Result<IngestResult> stored = (*ledger)->ingest(chain.take(200));
        QVERIFY2(stored, stored ? "" : stored.message().c_str());
        acknowledged = stored->lastSeq;
    }
    QCOMPARE(acknowledged, qint64(600));

    const Result<qint64> taken = fs.fill();
    QVERIFY2(taken, taken ? "" : taken.message().c_str());
    // SQLite reuses pages it already holds, so the first pages may still fit: keep sending until
    // the disk refuses one (a disk that never refuses fails the test: nothing was tried).
    std::vector<protocol::CreditReceipt> refused;
    std::string error;
    for (int page = 0; page < 200 && refused.empty(); ++page) {
        std::vector<protocol::CreditReceipt> receipts = chain.take(500);
        Result<IngestResult> stored = (*ledger)->ingest(receipts);
        if (stored) {
            acknowledged = stored->lastSeq;
            continue;
        }
        refused = std::move(receipts);
        error = stored.message();
    }
    QVERIFY2(!refused.empty(), "the full disk never refused a write");
    qInfo("what the node logs: %s", error.c_str());
    QVERIFY2(error.find("cannot store credit receipts in " + path.toStdString()) != std::string::npos,
             error.c_str());
    QVERIFY2(error.find("full") != std::string::npos, error.c_str());

    // Everything acknowledged is there, and nothing of the refused page.
    Result<LedgerTotals> totals = (*ledger)->totals();
    QVERIFY2(totals, totals ? "" : totals.message().c_str());
    QCOMPARE(totals->lastSeq, acknowledged);
    QCOMPARE(totals->receipts, acknowledged);
    QCOMPARE(refused.front().seq, acknowledged + 1);

    // Space returns: the same page (the next poll asks after the last stored number) is stored.
    fs.unfill();
    Result<IngestResult> again = (*ledger)->ingest(refused);
    QVERIFY2(again, again ? "" : again.message().c_str());
    QCOMPARE(again->stored, qint64(refused.size()));
    QCOMPARE(again->lastSeq, refused.back().seq);
    ledger->reset();

    // Read again from the file, as after a restart: the whole chain verifies.
    Result<std::unique_ptr<LocalLedger>> reopened = LocalLedger::openExisting(path);
    QVERIFY2(reopened, reopened ? "" : reopened.message().c_str());
    Result<VerifyReport> report = (*reopened)->verify();
    QVERIFY2(report, report ? "" : report.message().c_str());
    QVERIFY2(report->ok(), qPrintable(report->problem));
    QCOMPARE(report->checked, refused.back().seq);
}

int main(int argc, char** argv) {
    test::SmallFilesystem::reexecUnsharedIfNeeded(argc, argv);
    QCoreApplication app(argc, argv);
    TestLocalLedgerDiskFull test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_local_ledger_disk_full.moc"
