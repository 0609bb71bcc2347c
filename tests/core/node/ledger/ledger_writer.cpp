// SPDX-License-Identifier: Apache-2.0
// ledger_writer: a test-only program that ingests a long stream of valid receipts into a node
// ledger in small batches and prints "acked N" after each commit, so that a test can SIGKILL
// it at any moment and check that nothing acknowledged was lost.
//
// Usage: ledger_writer LEDGER COORDINATOR_KEY_FILE NODE_ID LAST_SEQ BATCH
#include "ReceiptChain.h"
#include "common/Identity.h"
#include "node/ledger/LocalLedger.h"

#include <QCoreApplication>
#include <QStringList>

#include <cstdio>

using namespace tessera;

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() != 6) {
        std::fprintf(stderr, "usage: ledger_writer LEDGER KEY_FILE NODE_ID LAST_SEQ BATCH\n");
        return 2;
    }
    const qint64 lastSeq = args[4].toLongLong();
    const int batch = args[5].toInt();
    Result<Identity> key = Identity::load(args[2]);
    if (!key) {
        std::fprintf(stderr, "ledger_writer: %s\n", key.message().c_str());
        return 1;
    }
    Result<std::unique_ptr<node::LocalLedger>> ledger =
        node::LocalLedger::open(args[1], args[3], key->publicKey());
    if (!ledger) {
        std::fprintf(stderr, "ledger_writer: %s\n", ledger.message().c_str());
        return 1;
    }
    // Continue the chain where the ledger ends (a previous run may have been killed).
    Result<node::LedgerTotals> totals = (*ledger)->totals();
    if (!totals) {
        std::fprintf(stderr, "ledger_writer: %s\n", totals.message().c_str());
        return 1;
    }
    QString lastHash = protocol::kGenesisHash;
    if (totals->lastSeq > 0) {
        Result<std::vector<protocol::CreditReceipt>> last = (*ledger)->list(totals->lastSeq - 1, 1);
        if (!last || last->empty()) {
            std::fprintf(stderr, "ledger_writer: cannot read the last receipt\n");
            return 1;
        }
        lastHash = last->front().hash;
    }
    test::ReceiptChain chain(*key, args[3], totals->lastSeq, lastHash);
    for (qint64 seq = totals->lastSeq; seq < lastSeq;) {
        const std::vector<protocol::CreditReceipt> receipts =
            chain.take(int(qMin<qint64>(batch, lastSeq - seq)));
        Result<node::IngestResult> ingested = (*ledger)->ingest(receipts);
        if (!ingested) {
            std::fprintf(stderr, "ledger_writer: %s\n", ingested.message().c_str());
            return 1;
        }
        seq = ingested->lastSeq;
        std::printf("acked %lld\n", static_cast<long long>(seq));
        std::fflush(stdout);
    }
    return 0;
}
