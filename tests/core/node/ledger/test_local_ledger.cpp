// SPDX-License-Identifier: Apache-2.0
// LocalLedger on real SQLite files: a valid chain is kept, re-fetched pages store nothing twice,
// every kind of tampering is refused before it is stored, edits behind the ledger's back are
// found offline, the CSV export and `tessera-node ledger` answer as documented, and a writer
// SIGKILLed at random moments never loses a receipt it acknowledged.
#include "LedgerCommand.h"
#include "ReceiptChain.h"
#include "TestSupport.h"
#include "common/Identity.h"
#include "node/ledger/LocalLedger.h"

#include <QBuffer>
#include <QDir>
#include <QProcess>
#include <QRandomGenerator>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

#include <limits>
#include <optional>
#include <sstream>

using namespace tessera;
using namespace tessera::node;
using protocol::CreditReceipt;
using test::failure;
using test::ReceiptChain;

namespace {

const QString kNode = QStringLiteral("node-a");

// Runs statements on the ledger file through a connection of its own, as a user with the
// sqlite3 shell would.
bool editBehindTheLedger(const QString& path, const QStringList& statements) {
    bool ok = true;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("raw-edit"));
        db.setDatabaseName(path);
        ok = db.open();
        for (const QString& s : statements) {
            QSqlQuery q(db);
            if (ok && !q.exec(s)) {
                qWarning("%s: %s", qPrintable(s), qPrintable(q.lastError().text()));
                ok = false;
            }
        }
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("raw-edit"));
    return ok;
}

struct CommandRun {
    int exitCode;
    QString out;
    QString err;
};

CommandRun runLedger(const QStringList& args, const QString& dataDir) {
    std::ostringstream out;
    std::ostringstream err;
    const int code = runLedgerCommand(args, dataDir, out, err);
    return {code, QString::fromStdString(out.str()), QString::fromStdString(err.str())};
}

} // namespace

class TestLocalLedger final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void storesAValidChain();
    void reingestStoresNothingTwice();
    void tamperingIsRefused_data();
    void tamperingIsRefused();
    void editsBehindOurBackAreFound_data();
    void editsBehindOurBackAreFound();
    void refusesAnotherNodeKeyOrNewerSchema();
    void exportsCsv();
    void formatsCredits();
    void ledgerCommand();
    void killedWriterLosesNothingAcknowledged();
    void aLedgerWhoseCreationWasCutShortVerifiesEmpty();

private:
    QString freshPath() { return m_dir.filePath(QStringLiteral("ledger-%1/ledger.sqlite").arg(++m_files)); }
    std::unique_ptr<LocalLedger> open(const QString& path) {
        Result<std::unique_ptr<LocalLedger>> l = LocalLedger::open(path, kNode, m_key->publicKey());
        if (!l)
            qWarning("%s", l.message().c_str());
        return l ? std::move(*l) : nullptr;
    }

    QTemporaryDir m_dir;
    std::optional<Identity> m_key;
    int m_files = 0;
};

void TestLocalLedger::initTestCase() {
    QVERIFY(m_dir.isValid());
    Result<Identity> key = Identity::generate();
    QVERIFY2(key, failure(key));
    m_key = *key;
}

void TestLocalLedger::storesAValidChain() {
    const QString path = freshPath();
    ReceiptChain chain(*m_key, kNode);
    const std::vector<CreditReceipt> receipts = chain.take(5);
    {
        std::unique_ptr<LocalLedger> ledger = open(path);
        QVERIFY(ledger);
        Result<IngestResult> r = ledger->ingest({receipts.begin(), receipts.begin() + 2});
        QVERIFY2(r, failure(r));
        QCOMPARE(r->stored, qint64(2));
        r = ledger->ingest({receipts.begin() + 2, receipts.end()});
        QVERIFY2(r, failure(r));
        QCOMPARE(r->stored, qint64(3));
        QCOMPARE(r->lastSeq, qint64(5));
    }
    // Reopened: everything is still there, exactly.
    std::unique_ptr<LocalLedger> ledger = open(path);
    QVERIFY(ledger);
    Result<LedgerTotals> t = ledger->totals();
    QVERIFY2(t, failure(t));
    qint64 micro = 0;
    double flop = 0;
    for (const CreditReceipt& r : receipts) {
        micro += r.microCredits;
        flop += double(r.flop);
    }
    QCOMPARE(t->receipts, qint64(5));
    QCOMPARE(t->lastSeq, qint64(5));
    QCOMPARE(t->microCredits, micro);
    QCOMPARE(t->flop, flop);
    Result<std::vector<CreditReceipt>> listed = ledger->list(1, 3);
    QVERIFY2(listed, failure(listed));
    QCOMPARE(listed->size(), size_t(3));
    for (size_t i = 0; i < 3; ++i) {
        const CreditReceipt& a = (*listed)[i];
        const CreditReceipt& b = receipts[i + 1];
        QCOMPARE(a.seq, b.seq);
        QCOMPARE(a.nodeId, b.nodeId);
        QCOMPARE(a.issuedAtMs, b.issuedAtMs);
        QCOMPARE(a.flop, b.flop);
        QCOMPARE(a.microCredits, b.microCredits);
        QCOMPARE(a.prevHash, b.prevHash);
        QCOMPARE(a.hash, b.hash);
        QCOMPARE(a.signature, b.signature);
    }
    Result<VerifyReport> v = ledger->verify();
    QVERIFY2(v, failure(v));
    QVERIFY2(v->ok(), qPrintable(v->problem));
    QCOMPARE(v->checked, qint64(5));
    QCOMPARE(v->totals.microCredits, micro);
    QCOMPARE(v->totals.lastSeq, qint64(5));
}

void TestLocalLedger::reingestStoresNothingTwice() {
    std::unique_ptr<LocalLedger> ledger = open(freshPath());
    QVERIFY(ledger);
    ReceiptChain chain(*m_key, kNode);
    const std::vector<CreditReceipt> receipts = chain.take(8);
    const std::vector<CreditReceipt> first(receipts.begin(), receipts.begin() + 5);
    QVERIFY(ledger->ingest(first));
    // The same page fetched again.
    Result<IngestResult> again = ledger->ingest(first);
    QVERIFY2(again, failure(again));
    QCOMPARE(again->stored, qint64(0));
    QCOMPARE(again->duplicates, qint64(5));
    QCOMPARE(again->lastSeq, qint64(5));
    // A page that overlaps what is held.
    Result<IngestResult> overlap = ledger->ingest({receipts.begin() + 2, receipts.end()});
    QVERIFY2(overlap, failure(overlap));
    QCOMPARE(overlap->stored, qint64(3));
    QCOMPARE(overlap->duplicates, qint64(3));
    QCOMPARE(overlap->lastSeq, qint64(8));
    Result<IngestResult> empty = ledger->ingest({});
    QVERIFY2(empty, failure(empty));
    QCOMPARE(empty->lastSeq, qint64(8));
    QCOMPARE(ledger->totals()->receipts, qint64(8));
}

void TestLocalLedger::tamperingIsRefused_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("bad signature") << "signature"
                                   << "receipt #5: signature is not the coordinator's";
    QTest::newRow("wrong hash") << "hash"
                                << "receipt #5: hash does not match its contents";
    QTest::newRow("gap in seq") << "gap"
                                << "receipt #6: a gap in seq: #5 missing";
    QTest::newRow("broken prev_hash") << "prev"
                                      << "receipt #5: prev_hash does not link to receipt #4";
    QTest::newRow("other node's receipt") << "node"
                                          << "receipt #5: issued to node node-b, not to this node";
    QTest::newRow("rewritten history")
        << "rewrite"
        << "receipt #2 differs from the one stored: the coordinator rewrote history";
    QTest::newRow("forged stored receipt") << "forge"
                                           << "receipt #2: signature is not the coordinator's";
}

void TestLocalLedger::tamperingIsRefused() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    std::unique_ptr<LocalLedger> ledger = open(freshPath());
    QVERIFY(ledger);
    ReceiptChain chain(*m_key, kNode);
    const std::vector<CreditReceipt> good = chain.take(6);
    QVERIFY(ledger->ingest({good.begin(), good.begin() + 3}));

    Result<Identity> stranger = Identity::generate();
    QVERIFY(stranger);
    CreditReceipt bad = good[4];
    if (kind == u"signature") {
        bad.signature = stranger->sign(bad.payload());
    } else if (kind == u"hash") {
        bad.hash = good[3].hash;
    } else if (kind == u"gap") {
        bad = good[5];
    } else if (kind == u"prev") {
        bad.prevHash = good[2].hash;
        bad = ReceiptChain::sign(bad, *m_key); // the coordinator's own key: only the link is wrong
    } else if (kind == u"node") {
        bad.nodeId = QStringLiteral("node-b");
        bad = ReceiptChain::sign(bad, *m_key);
    } else if (kind == u"rewrite" || kind == u"forge") {
        bad = good[1];
        bad.microCredits += 1'000'000;
        bad = ReceiptChain::sign(bad, kind == u"rewrite" ? *m_key : *stranger);
    }
    // The valid #4 before the bad receipt is kept; nothing from the bad one on.
    Result<IngestResult> r = ledger->ingest({good[3], bad, good[5]});
    QVERIFY(!r);
    QVERIFY2(QString::fromStdString(r.message()).startsWith(expected), r.message().c_str());
    Result<LedgerTotals> t = ledger->totals();
    QVERIFY2(t, failure(t));
    QCOMPARE(t->lastSeq, qint64(4));
    QCOMPARE(t->receipts, qint64(4));
    QCOMPARE(ledger->list(1, 1)->front().microCredits, good[1].microCredits);
    // The ledger stays usable: the genuine receipts still go in.
    Result<IngestResult> rest = ledger->ingest({good[4], good[5]});
    QVERIFY2(rest, failure(rest));
    QCOMPARE(rest->lastSeq, qint64(6));
    QVERIFY(ledger->verify()->ok());
}

void TestLocalLedger::editsBehindOurBackAreFound_data() {
    QTest::addColumn<QString>("statement");
    QTest::addColumn<QString>("expected");
    QTest::addColumn<qint64>("checked");
    QTest::newRow("micro_credits raised")
        << "UPDATE receipts SET micro_credits = micro_credits + 1000000 WHERE seq = 3"
        << "receipt #3: hash does not match its contents" << qint64(2);
    QTest::newRow("row deleted") << "DELETE FROM receipts WHERE seq = 3"
                                 << "receipt #4: a gap in seq: #3 missing" << qint64(2);
    QTest::newRow("signature replaced") << "UPDATE receipts SET signature = zeroblob(64) WHERE seq = 4"
                                        << "receipt #4: signature is not the coordinator's" << qint64(3);
    QTest::newRow("row slipped in below #1")
        << "INSERT INTO receipts SELECT 0, issued_at, flop, micro_credits, prev_hash, hash, signature "
           "FROM receipts WHERE seq = 1"
        << "receipt #0: out of order: expected #1" << qint64(0);
}

void TestLocalLedger::editsBehindOurBackAreFound() {
    QFETCH(QString, statement);
    QFETCH(QString, expected);
    QFETCH(qint64, checked);
    const QString path = freshPath();
    {
        std::unique_ptr<LocalLedger> ledger = open(path);
        QVERIFY(ledger);
        ReceiptChain chain(*m_key, kNode);
        QVERIFY(ledger->ingest(chain.take(5)));
    }
    QVERIFY(editBehindTheLedger(path, {statement}));
    Result<std::unique_ptr<LocalLedger>> ledger = LocalLedger::openExisting(path);
    QVERIFY2(ledger, failure(ledger));
    Result<VerifyReport> v = (*ledger)->verify();
    QVERIFY2(v, failure(v));
    QVERIFY(!v->ok());
    QVERIFY2(v->problem.startsWith(expected), qPrintable(v->problem));
    QCOMPARE(v->checked, checked);

    const CommandRun run = runLedger({QStringLiteral("verify")}, QFileInfo(path).absolutePath());
    QCOMPARE(run.exitCode, 1);
    QVERIFY2(run.err.contains(expected), qPrintable(run.err));
    QVERIFY(run.out.isEmpty());
}

void TestLocalLedger::refusesAnotherNodeKeyOrNewerSchema() {
    const QString path = freshPath();
    QVERIFY(open(path));
    Result<Identity> other = Identity::generate();
    QVERIFY(other);
    Result<std::unique_ptr<LocalLedger>> l = LocalLedger::open(path, kNode, other->publicKey());
    QVERIFY(!l);
    QVERIFY2(QString::fromStdString(l.message())
                 .contains(u"signed by coordinator key "_qs + m_key->publicKeyBase64()),
             l.message().c_str());
    l = LocalLedger::open(path, QStringLiteral("node-b"), m_key->publicKey());
    QVERIFY(!l);
    QVERIFY2(l.message().find("belongs to node node-a, not to this node (node-b)") != std::string::npos,
             l.message().c_str());
    // The meta row is what offline verification trusts.
    l = LocalLedger::openExisting(path);
    QVERIFY2(l, failure(l));
    QCOMPARE((*l)->nodeId(), kNode);
    QCOMPARE((*l)->coordinatorKey(), m_key->publicKey());
    l = Error{};

    QVERIFY(editBehindTheLedger(
        path, {QStringLiteral("UPDATE meta SET value = '99' WHERE key = 'schema_version'")}));
    l = LocalLedger::open(path, kNode, m_key->publicKey());
    QVERIFY(!l);
    QVERIFY2(l.message().find("newer tessera-node (ledger schema 99") != std::string::npos,
             l.message().c_str());

    QVERIFY(test::writeFile(m_dir.filePath(QStringLiteral("notes.sqlite")), "not a database, just notes\n"));
    l = LocalLedger::openExisting(m_dir.filePath(QStringLiteral("notes.sqlite")));
    QVERIFY(!l);
    QVERIFY2(l.message().find("not a database") != std::string::npos, l.message().c_str());
    l = LocalLedger::openExisting(m_dir.filePath(QStringLiteral("missing/ledger.sqlite")));
    QVERIFY(!l);
    QVERIFY2(l.message().find("no ledger at") != std::string::npos, l.message().c_str());
    QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("missing"))));
}

void TestLocalLedger::exportsCsv() {
    std::unique_ptr<LocalLedger> ledger = open(freshPath());
    QVERIFY(ledger);
    CreditReceipt a;
    a.nodeId = kNode;
    a.seq = 1;
    a.issuedAtMs = 1'700'000'000'123;
    a.flop = 1'234'567'000'000'000;
    a.microCredits = 1'234'567;
    a.prevHash = protocol::kGenesisHash;
    a = ReceiptChain::sign(a, *m_key);
    CreditReceipt b = a;
    b.seq = 2;
    b.issuedAtMs = 0;
    b.flop = 5'000'000'000;
    b.microCredits = 5;
    b.prevHash = a.hash;
    b = ReceiptChain::sign(b, *m_key);
    QVERIFY(ledger->ingest({a, b}));

    QBuffer buffer;
    QVERIFY(buffer.open(QIODevice::WriteOnly));
    const Status s = ledger->exportCsv(buffer);
    QVERIFY2(s, failure(s));
    const QString expected = u"seq,issued_at,flop,micro_credits,credits,hash,prev_hash,signature\r\n"
                             u"1,2023-11-14T22:13:20.123Z,1234567000000000,1234567,1.234567,"_qs +
                             a.hash + u',' + a.prevHash + u',' + Identity::toBase64Url(a.signature) +
                             u"\r\n2,1970-01-01T00:00:00.000Z,5000000000,5,0.000005,"_qs + b.hash + u',' +
                             a.hash + u',' + Identity::toBase64Url(b.signature) + u"\r\n"_qs;
    QCOMPARE(QString::fromUtf8(buffer.data()), expected);

    QBuffer closed; // not open: the write fails and says so
    QVERIFY(!ledger->exportCsv(closed));
}

void TestLocalLedger::formatsCredits() {
    QCOMPARE(formatCredits(0), u"0.000000"_qs);
    QCOMPARE(formatCredits(1), u"0.000001"_qs);
    QCOMPARE(formatCredits(1'234'567), u"1.234567"_qs);
    QCOMPARE(formatCredits(-5), u"-0.000005"_qs);
    QCOMPARE(formatCredits(std::numeric_limits<qint64>::max()), u"9223372036854.775807"_qs);
    QCOMPARE(formatCredits(std::numeric_limits<qint64>::min()), u"-9223372036854.775808"_qs);
}

void TestLocalLedger::ledgerCommand() {
    const QString path = freshPath();
    const QString dataDir = QFileInfo(path).absolutePath();
    CommandRun run = runLedger({QStringLiteral("verify")}, dataDir);
    QCOMPARE(run.exitCode, 1);
    QVERIFY2(run.err.startsWith(u"tessera-node: ledger verify: no ledger at "_qs + path),
             qPrintable(run.err));
    QVERIFY(!QFileInfo::exists(path)); // verifying never creates one

    {
        std::unique_ptr<LocalLedger> ledger = open(path);
        QVERIFY(ledger);
        ReceiptChain chain(*m_key, kNode);
        QVERIFY(ledger->ingest(chain.take(3)));
        run = runLedger({QStringLiteral("verify")}, dataDir);
        QCOMPARE(run.exitCode, 0);
        // 1.18e14 FLOP · (2, 3, 1): 235929 + 353894 + 117964 micro-credits, each rounded down.
        QCOMPARE(run.out, u"ledger ok: 3 receipts, "_qs + formatCredits(ledger->totals()->microCredits) +
                              u" credits\n"_qs);
        QCOMPARE(run.out, u"ledger ok: 3 receipts, 0.707787 credits\n"_qs);
        QVERIFY(run.err.isEmpty());

        QBuffer buffer;
        QVERIFY(buffer.open(QIODevice::WriteOnly));
        QVERIFY(ledger->exportCsv(buffer));
        run = runLedger({QStringLiteral("export"), QStringLiteral("--csv")}, dataDir);
        QCOMPARE(run.exitCode, 0);
        QCOMPARE(run.out, QString::fromUtf8(buffer.data()));
    }

    run = runLedger({QStringLiteral("--help")}, dataDir);
    QCOMPARE(run.exitCode, 0);
    QVERIFY(run.out.contains(u"export --csv"));
    run = runLedger({QStringLiteral("verify"), QStringLiteral("--help")}, dataDir);
    QCOMPARE(run.exitCode, 0);
    QVERIFY(run.out.startsWith(u"Usage: tessera-node ledger verify"));
    for (const QStringList& wrong : {QStringList{}, QStringList{QStringLiteral("export")},
                                     QStringList{QStringLiteral("verify"), QStringLiteral("--csv")},
                                     QStringList{QStringLiteral("verify"), QStringLiteral("now")},
                                     QStringList{QStringLiteral("shred")}}) {
        run = runLedger(wrong, dataDir);
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.startsWith(u"tessera-node: ledger: "), qPrintable(run.err));
        QVERIFY(run.out.isEmpty());
    }
}

void TestLocalLedger::killedWriterLosesNothingAcknowledged() {
    const QString keyPath = m_dir.filePath(QStringLiteral("coordinator.key"));
    Result<Identity> key = Identity::loadOrCreate(keyPath);
    QVERIFY2(key, failure(key));
    const QString path = freshPath();
    constexpr int kBatch = 7;
    const quint32 seed = QRandomGenerator::global()->generate();
    qInfo("random seed %u", seed);
    QRandomGenerator random(seed);

    qint64 before = 0;
    for (int round = 0; round < 5; ++round) {
        QProcess writer;
        writer.start(QStringLiteral(TESSERA_LEDGER_WRITER_PATH),
                     {path, keyPath, kNode, QStringLiteral("100000000"), QString::number(kBatch)});
        QVERIFY2(writer.waitForStarted(), qPrintable(writer.errorString()));
        // Kill it at a random moment once it is writing.
        QVERIFY(QTest::qWaitFor(
            [&] { return writer.canReadLine() || writer.state() == QProcess::NotRunning; }, 30'000));
        QTest::qWait(int(random.bounded(1, 300)));
        writer.kill(); // SIGKILL
        QVERIFY(writer.waitForFinished(30'000));
        QVERIFY2(writer.exitStatus() == QProcess::CrashExit, writer.readAllStandardError().constData());

        qint64 acked = 0;
        for (const QByteArray& line : writer.readAllStandardOutput().split('\n')) {
            if (line.startsWith("acked "))
                acked = line.mid(6).toLongLong();
        }
        QVERIFY(acked > before);

        Result<std::unique_ptr<LocalLedger>> ledger = LocalLedger::open(path, kNode, key->publicKey());
        QVERIFY2(ledger, failure(ledger));
        Result<VerifyReport> v = (*ledger)->verify(); // integrity_check first, then the chain
        QVERIFY2(v, failure(v));
        QVERIFY2(v->ok(), qPrintable(v->problem));
        Result<LedgerTotals> t = (*ledger)->totals();
        QVERIFY2(t, failure(t));
        qInfo("round %d: acked %lld, ledger holds %lld", round, acked, t->lastSeq);
        QVERIFY(t->lastSeq >= acked);
        QCOMPARE(t->lastSeq % kBatch, qint64(0)); // batches are whole or absent
        QCOMPARE(v->checked, t->lastSeq);
        before = t->lastSeq;
    }
}

namespace {

// An SQLite file at `path` (its folder made) after one statement: what another program, or an interrupted
// creation, leaves there.
bool sqliteFileWith(const QString& path, const QString& statement) {
    if (!QDir().mkpath(QFileInfo(path).absolutePath()))
        return false;
    bool ok = false;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("plain"));
        db.setDatabaseName(path);
        ok = db.open() && QSqlQuery(db).exec(statement);
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("plain"));
    return ok;
}

} // namespace

// The node killed between opening its new ledger (SQLite writes the file's header when WAL is set) and
// committing the schema's transaction — `test_swarm` SIGKILLed a node there: the file holds nothing. It is
// an empty ledger, not a foreign file: `verify` says ok with no receipt, `export` writes the header only, and
// the node completes it on its next start. A file holding other tables is still refused.
void TestLocalLedger::aLedgerWhoseCreationWasCutShortVerifiesEmpty() {
    const QString path = freshPath();
    const QString dataDir = QFileInfo(path).absolutePath();
    QVERIFY(sqliteFileWith(path, QStringLiteral("PRAGMA journal_mode = WAL")));
    QVERIFY(QFileInfo(path).size() > 0);
    CommandRun run = runLedger({QStringLiteral("verify")}, dataDir);
    QCOMPARE(run.exitCode, 0);
    QVERIFY2(run.out.startsWith(u"ledger ok: 0 receipts, 0.000000 credits\n"_qs) && run.out.contains(u"empty ledger"),
             qPrintable(run.out + run.err));
    run = runLedger({QStringLiteral("export"), QStringLiteral("--csv")}, dataDir);
    QCOMPARE(run.exitCode, 0);
    QCOMPARE(run.out, u"seq,issued_at,flop,micro_credits,credits,hash,prev_hash,signature\r\n"_qs);
    // The node's next start writes the schema into it, and it takes receipts.
    {
        std::unique_ptr<LocalLedger> ledger = open(path);
        QVERIFY(ledger);
        ReceiptChain chain(*m_key, kNode);
        QVERIFY(ledger->ingest(chain.take(2)));
    }
    run = runLedger({QStringLiteral("verify")}, dataDir);
    QCOMPARE(run.exitCode, 0);
    QVERIFY2(run.out.startsWith(u"ledger ok: 2 receipts"_qs) && !run.out.contains(u"empty ledger"), qPrintable(run.out));
    // Another program's database is no ledger.
    const QString other = freshPath();
    QVERIFY(sqliteFileWith(other, QStringLiteral("CREATE TABLE photos (id INTEGER)")));
    Result<std::unique_ptr<LocalLedger>> refused = LocalLedger::openExisting(other);
    QVERIFY(!refused);
    QVERIFY2(refused.message().find("not a tessera-node ledger") != std::string::npos, refused.message().c_str());
}

QTEST_GUILESS_MAIN(TestLocalLedger)
#include "test_local_ledger.moc"
