// SPDX-License-Identifier: Apache-2.0
#include "node/ledger/LocalLedger.h"

#include "common/Identity.h"
#include "common/Sql.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QIODevice>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>

#include <atomic>
#include <functional>
#include <limits>

namespace tessera::node {

namespace sql = tessera::sql;

namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr int kPageSize = 1000;

const QString kSelectReceipts =
    QStringLiteral("SELECT seq, issued_at, flop, micro_credits, prev_hash, hash, signature FROM receipts ");

std::string text(const QString& s) {
    return s.toStdString();
}

std::string seqText(qint64 seq) {
    return '#' + std::to_string(seq);
}

QString nextConnectionName() {
    static std::atomic<quint64> counter{0};
    return QStringLiteral("tessera-node-ledger-%1").arg(counter.fetch_add(1) + 1);
}

CreditReceipt readReceipt(const QSqlQuery& q, const QString& nodeId) {
    CreditReceipt r;
    r.nodeId = nodeId;
    r.seq = q.value(0).toLongLong();
    r.issuedAtMs = q.value(1).toLongLong();
    r.flop = q.value(2).toLongLong();
    r.microCredits = q.value(3).toLongLong();
    r.prevHash = q.value(4).toString();
    r.hash = q.value(5).toString();
    r.signature = q.value(6).toByteArray();
    return r;
}

bool sameContent(const CreditReceipt& a, const CreditReceipt& b) {
    return a.seq == b.seq && a.issuedAtMs == b.issuedAtMs && a.flop == b.flop &&
           a.microCredits == b.microCredits && a.prevHash == b.prevHash && a.hash == b.hash &&
           a.signature == b.signature;
}

// What is wrong with r as the receipt after (expectedSeq - 1, prevHash); empty when nothing.
// The chain is checked before the hash and the hash before the signature, so the message
// names the field that was changed rather than only its consequence.
std::string problemWith(const CreditReceipt& r, qint64 expectedSeq, const QString& prevHash,
                        const QString& nodeId, const QByteArray& coordinatorKey) {
    if (r.nodeId != nodeId)
        return "issued to node " + text(r.nodeId) + ", not to this node (" + text(nodeId) + ")";
    if (r.seq != expectedSeq) {
        if (r.seq > expectedSeq)
            return "a gap in seq: " + seqText(expectedSeq) +
                   (r.seq - 1 > expectedSeq ? " to " + seqText(r.seq - 1) : std::string()) + " missing";
        return "out of order: expected " + seqText(expectedSeq);
    }
    if (r.prevHash != prevHash)
        return expectedSeq == 1 ? std::string("prev_hash of the first receipt is not the genesis hash")
                                : "prev_hash does not link to receipt " + seqText(expectedSeq - 1);
    if (r.hash != r.computeHash())
        return "hash does not match its contents";
    if (!Identity::verify(coordinatorKey, r.payload(), r.signature))
        return "signature is not the coordinator's";
    return {};
}

// SQLite takes the write lock up front (BEGIN IMMEDIATE), so a concurrent writer waits
// instead of failing on a lock upgrade halfway.
Status writeTransaction(const QSqlDatabase& db, const std::function<Status()>& body) {
    if (Result<QSqlQuery> q = sql::exec(db, QStringLiteral("BEGIN IMMEDIATE")); !q)
        return q.error();
    Status s = body();
    if (s) {
        Result<QSqlQuery> commit = sql::exec(db, QStringLiteral("COMMIT"));
        if (commit)
            return {};
        s = commit.error();
    }
    (void)sql::exec(db, QStringLiteral("ROLLBACK"));
    return s;
}

QByteArray csvField(const QString& value) {
    QByteArray utf8 = value.toUtf8();
    if (!utf8.contains(',') && !utf8.contains('"') && !utf8.contains('\r') && !utf8.contains('\n'))
        return utf8;
    return '"' + utf8.replace("\"", "\"\"") + '"';
}

} // namespace

QString formatCredits(qint64 microCredits) {
    // Integer arithmetic: a double would round the last digits of large totals.
    const quint64 magnitude = microCredits < 0 ? 0 - quint64(microCredits) : quint64(microCredits);
    return QStringLiteral("%1%2.%3")
        .arg(microCredits < 0 ? QStringLiteral("-") : QString())
        .arg(magnitude / quint64(protocol::kMicroCreditsPerCredit))
        .arg(magnitude % quint64(protocol::kMicroCreditsPerCredit), 6, 10, QLatin1Char('0'));
}

LocalLedger::LocalLedger(QString path, QString connectionName)
    : m_path(std::move(path))
    , m_connectionName(std::move(connectionName)) {}

LocalLedger::~LocalLedger() {
    m_db.close();
    m_db = QSqlDatabase(); // every handle must be gone before Qt forgets the name
    QSqlDatabase::removeDatabase(m_connectionName);
}

Result<std::unique_ptr<LocalLedger>> LocalLedger::connect(const QString& path) {
    if (!QSqlDatabase::isDriverAvailable(QStringLiteral("QSQLITE")))
        return makeError("the Qt SQL driver QSQLITE is not installed (Debian: libqt6sql6-sqlite)");
    const QString absolute = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
    const QString dir = QFileInfo(absolute).absolutePath();
    if (!QDir().mkpath(dir))
        return makeError("cannot create the ledger's directory " + text(dir));
    std::unique_ptr<LocalLedger> ledger(new LocalLedger(absolute, nextConnectionName()));
    ledger->m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), ledger->m_connectionName);
    ledger->m_db.setDatabaseName(absolute);
    if (!ledger->m_db.open())
        return sql::error(QStringLiteral("cannot open the ledger ") + absolute, ledger->m_db.lastError());
    // WAL: a crash mid-write leaves the last commit intact. synchronous=FULL: a commit is on
    // disk before ingest returns, even across power loss, because an acknowledged receipt is
    // the node's only proof of work done.
    const auto fail = [&](const std::string& why) {
        return makeError("cannot use the ledger " + text(absolute) + ": " + why);
    };
    Result<std::optional<QVariant>> mode =
        sql::scalar(ledger->m_db, QStringLiteral("PRAGMA journal_mode = WAL"));
    if (!mode)
        return fail(mode.message());
    if (!*mode || (*mode)->toString().compare(u"wal", Qt::CaseInsensitive) != 0)
        return fail("the file system does not support SQLite's WAL mode");
    for (const QString& pragma : {QStringLiteral("PRAGMA synchronous = FULL"),
                                  QStringLiteral("PRAGMA busy_timeout = %1").arg(kBusyTimeoutMs)}) {
        if (Result<QSqlQuery> q = sql::exec(ledger->m_db, pragma); !q)
            return fail(q.message());
    }
    return ledger;
}

Result<std::unique_ptr<LocalLedger>> LocalLedger::open(const QString& path, const QString& nodeId,
                                                       const QByteArray& coordinatorPublicKey) {
    if (coordinatorPublicKey.size() != Identity::kPublicKeySize)
        return makeError("the coordinator key must be 32 bytes (Ed25519)");
    if (nodeId.isEmpty())
        return makeError("a ledger needs the node id");
    Result<std::unique_ptr<LocalLedger>> ledger = connect(path);
    if (!ledger)
        return ledger;
    if (Status s = (*ledger)->createOrCheckSchema(nodeId, coordinatorPublicKey); !s)
        return s.error();
    return ledger;
}

Result<std::unique_ptr<LocalLedger>> LocalLedger::openExisting(const QString& path) {
    if (!QFileInfo::exists(path))
        return makeError("no ledger at " + text(path));
    Result<std::unique_ptr<LocalLedger>> ledger = connect(path);
    if (!ledger)
        return ledger;
    // Nothing in it at all: its creation was cut short before the schema's transaction committed.
    Result<std::optional<QVariant>> objects =
        sql::scalar((*ledger)->m_db, QStringLiteral("SELECT COUNT(*) FROM sqlite_master"));
    if (!objects)
        return objects.error();
    if (*objects && (*objects)->toLongLong() == 0) {
        (*ledger)->m_unwritten = true;
        return ledger;
    }
    if (Status s = (*ledger)->readMeta(); !s)
        return s.error();
    return ledger;
}

Status LocalLedger::createOrCheckSchema(const QString& nodeId, const QByteArray& coordinatorKey) {
    Status created = writeTransaction(m_db, [&]() -> Status {
        Result<std::optional<QVariant>> hasMeta = sql::scalar(
            m_db, QStringLiteral("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"));
        if (!hasMeta)
            return hasMeta.error();
        if (*hasMeta)
            return {}; // readMeta checks the version before anything touches the tables
        for (const QString& ddl :
             {QStringLiteral("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"),
              QStringLiteral("CREATE TABLE receipts (seq INTEGER PRIMARY KEY, issued_at INTEGER NOT NULL, "
                             "flop INTEGER NOT NULL, micro_credits INTEGER NOT NULL, "
                             "prev_hash TEXT NOT NULL, hash TEXT NOT NULL, signature BLOB NOT NULL)")}) {
            if (Result<QSqlQuery> q = sql::exec(m_db, ddl); !q)
                return q.error();
        }
        const QList<std::pair<QString, QString>> rows = {
            {QStringLiteral("schema_version"), QString::number(kSchemaVersion)},
            {QStringLiteral("node_id"), nodeId},
            {QStringLiteral("coordinator_key"), Identity::toBase64Url(coordinatorKey)},
            {QStringLiteral("created_at"), QString::number(QDateTime::currentMSecsSinceEpoch())}};
        for (const auto& [key, value] : rows) {
            if (Result<QSqlQuery> q = sql::exec(
                    m_db, QStringLiteral("INSERT INTO meta (key, value) VALUES (?, ?)"), {key, value});
                !q)
                return q.error();
        }
        return {};
    });
    if (!created)
        return makeError("cannot create the ledger " + text(m_path) + ": " + created.message());
    if (Status s = readMeta(); !s)
        return s;
    if (m_nodeId != nodeId)
        return makeError("the ledger " + text(m_path) + " belongs to node " + text(m_nodeId) +
                         ", not to this node (" + text(nodeId) +
                         "); move it aside to keep it, or use the data dir it came from");
    if (m_coordinatorKey != coordinatorKey)
        return makeError("the ledger " + text(m_path) + " holds receipts signed by coordinator key " +
                         text(Identity::toBase64Url(m_coordinatorKey)) +
                         ", but the coordinator's key is now " + text(Identity::toBase64Url(coordinatorKey)) +
                         "; move the ledger aside to start a new one for this coordinator");
    return {};
}

Status LocalLedger::readMeta() {
    const auto fail = [&](const std::string& why) { return makeError(text(m_path) + ": " + why); };
    Result<std::optional<QVariant>> hasMeta = sql::scalar(
        m_db, QStringLiteral("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"));
    if (!hasMeta)
        return fail(hasMeta.message());
    if (!*hasMeta)
        return fail("not a tessera-node ledger (it has no meta table)");
    Result<QSqlQuery> q = sql::exec(m_db, QStringLiteral("SELECT key, value FROM meta"));
    if (!q)
        return fail(q.message());
    QHash<QString, QString> meta;
    while (q->next())
        meta.insert(q->value(0).toString(), q->value(1).toString());
    bool numeric = false;
    const int version = meta.value(QStringLiteral("schema_version")).toInt(&numeric);
    if (!numeric || version < 1)
        return fail("the ledger's meta table has no valid schema_version");
    if (version > kSchemaVersion)
        return fail("written by a newer tessera-node (ledger schema " + std::to_string(version) +
                    ", this one understands up to " + std::to_string(kSchemaVersion) +
                    "); run a newer tessera-node");
    m_nodeId = meta.value(QStringLiteral("node_id"));
    if (m_nodeId.isEmpty())
        return fail("the ledger's meta table names no node_id");
    Result<QByteArray> key =
        Identity::fromBase64Url(meta.value(QStringLiteral("coordinator_key")), Identity::kPublicKeySize);
    if (!key)
        return fail("the ledger's coordinator_key is unreadable: " + key.message());
    m_coordinatorKey = *key;
    return {};
}

Result<IngestResult> LocalLedger::ingest(const std::vector<CreditReceipt>& receipts) {
    IngestResult result;
    std::string problem;
    Status s = writeTransaction(m_db, [&]() -> Status {
        Result<QSqlQuery> last =
            sql::exec(m_db, QStringLiteral("SELECT seq, hash FROM receipts ORDER BY seq DESC LIMIT 1"));
        if (!last)
            return last.error();
        QString lastHash = protocol::kGenesisHash;
        if (last->next()) {
            result.lastSeq = last->value(0).toLongLong();
            lastHash = last->value(1).toString();
        }
        // Prepared once: a page holds up to 1000 receipts.
        QSqlQuery stored(m_db);
        QSqlQuery insert(m_db);
        if (!stored.prepare(kSelectReceipts + QStringLiteral("WHERE seq = ?")))
            return sql::error(QStringLiteral("SQL prepare failed"), stored.lastError());
        if (!insert.prepare(QStringLiteral("INSERT INTO receipts (seq, issued_at, flop, micro_credits, "
                                           "prev_hash, hash, signature) VALUES (?, ?, ?, ?, ?, ?, ?)")))
            return sql::error(QStringLiteral("SQL prepare failed"), insert.lastError());
        for (const CreditReceipt& r : receipts) {
            if (r.nodeId == m_nodeId && r.seq >= 1 && r.seq <= result.lastSeq) {
                stored.addBindValue(r.seq);
                if (!stored.exec())
                    return sql::error(QStringLiteral("reading receipt failed"), stored.lastError());
                const bool held = stored.next();
                const bool same = held && sameContent(readReceipt(stored, m_nodeId), r);
                stored.finish();
                if (same) {
                    ++result.duplicates;
                    continue;
                }
                // A forgery is named as one; a validly signed second version is the coordinator's.
                if (r.hash != r.computeHash())
                    problem = "receipt " + seqText(r.seq) + ": hash does not match its contents";
                else if (!Identity::verify(m_coordinatorKey, r.payload(), r.signature))
                    problem = "receipt " + seqText(r.seq) + ": signature is not the coordinator's";
                else
                    problem = "receipt " + seqText(r.seq) +
                              " differs from the one stored: the coordinator rewrote history";
                return {};
            }
            if (std::string p = problemWith(r, result.lastSeq + 1, lastHash, m_nodeId, m_coordinatorKey);
                !p.empty()) {
                problem = "receipt " + seqText(r.seq) + ": " + p;
                return {};
            }
            for (const QVariant& v :
                 QVariantList{r.seq, r.issuedAtMs, r.flop, r.microCredits, r.prevHash, r.hash, r.signature})
                insert.addBindValue(v);
            if (!insert.exec())
                return sql::error(QStringLiteral("storing receipt ") + QString::number(r.seq) +
                                      QStringLiteral(" failed"),
                                  insert.lastError());
            ++result.stored;
            result.lastSeq = r.seq;
            lastHash = r.hash;
        }
        return {};
    });
    if (!s)
        return makeError("cannot store credit receipts in " + text(m_path) + ": " + s.message());
    if (!problem.empty()) {
        if (result.stored > 0)
            problem += " (the " + std::to_string(result.stored) + " valid receipts before it were stored)";
        return makeError(problem);
    }
    return result;
}

Result<LedgerTotals> LocalLedger::totals() {
    if (m_unwritten)
        return LedgerTotals{};
    Result<QSqlQuery> q =
        sql::exec(m_db, QStringLiteral("SELECT COUNT(*), COALESCE(SUM(micro_credits), 0), TOTAL(flop), "
                                       "COALESCE(MAX(seq), 0) FROM receipts"));
    if (!q)
        return q.error();
    LedgerTotals t;
    if (q->next()) {
        t.receipts = q->value(0).toLongLong();
        t.microCredits = q->value(1).toLongLong();
        t.flop = q->value(2).toDouble();
        t.lastSeq = q->value(3).toLongLong();
    }
    return t;
}

Result<std::vector<CreditReceipt>> LocalLedger::list(qint64 afterSeq, int limit) {
    if (m_unwritten)
        return std::vector<CreditReceipt>{};
    Result<QSqlQuery> q =
        sql::exec(m_db, kSelectReceipts + QStringLiteral("WHERE seq > ? ORDER BY seq LIMIT ?"),
                  {afterSeq, qMax(limit, 0)});
    if (!q)
        return q.error();
    std::vector<CreditReceipt> receipts;
    while (q->next())
        receipts.push_back(readReceipt(*q, m_nodeId));
    return receipts;
}

Result<VerifyReport> LocalLedger::verify() {
    VerifyReport report;
    Result<QSqlQuery> integrity = sql::exec(m_db, QStringLiteral("PRAGMA integrity_check"));
    if (!integrity)
        return integrity.error();
    QStringList damage;
    while (integrity->next() && damage.size() < 5)
        damage << integrity->value(0).toString();
    if (damage != QStringList{QStringLiteral("ok")}) {
        report.problem = QStringLiteral("the SQLite file is damaged: ") + damage.join(QStringLiteral("; "));
        return report;
    }
    if (m_unwritten)
        return report; // no receipt: valid, and empty
    QString prevHash = protocol::kGenesisHash;
    // From the lowest seq there is, so that a row slipped in below #1 is found too.
    qint64 after = std::numeric_limits<qint64>::min();
    for (;;) {
        Result<std::vector<CreditReceipt>> page = list(after, kPageSize);
        if (!page)
            return page.error();
        for (const CreditReceipt& r : *page) {
            std::string p = problemWith(r, report.checked + 1, prevHash, m_nodeId, m_coordinatorKey);
            if (p.empty() && (r.flop < 0 || r.microCredits < 0))
                p = "negative credit";
            if (p.empty() && __builtin_add_overflow(report.totals.microCredits, r.microCredits,
                                                    &report.totals.microCredits))
                p = "the micro-credit total overflows";
            if (!p.empty()) {
                report.problem = QString::fromStdString("receipt " + seqText(r.seq) + ": " + p);
                return report;
            }
            ++report.checked;
            report.totals.receipts = report.checked;
            report.totals.flop += double(r.flop);
            report.totals.lastSeq = r.seq;
            prevHash = r.hash;
            after = r.seq;
        }
        if (qsizetype(page->size()) < kPageSize)
            return report;
    }
}

Status LocalLedger::exportCsv(QIODevice& out) {
    if (!out.isWritable())
        return makeError("cannot write the CSV export: the output is not open for writing");
    const auto write = [&](const QByteArray& line) -> Status {
        if (out.write(line) != line.size())
            return makeError("cannot write the CSV export: " + text(out.errorString()));
        return {};
    };
    if (Status s = write("seq,issued_at,flop,micro_credits,credits,hash,prev_hash,signature\r\n"); !s)
        return s;
    if (m_unwritten)
        return {};
    qint64 after = 0;
    for (;;) {
        Result<std::vector<CreditReceipt>> page = list(after, kPageSize);
        if (!page)
            return page.error();
        for (const CreditReceipt& r : *page) {
            const QStringList fields = {
                QString::number(r.seq),
                QDateTime::fromMSecsSinceEpoch(r.issuedAtMs, Qt::UTC).toString(Qt::ISODateWithMs),
                QString::number(r.flop),
                QString::number(r.microCredits),
                formatCredits(r.microCredits),
                r.hash,
                r.prevHash,
                Identity::toBase64Url(r.signature)};
            QByteArray line;
            for (const QString& f : fields)
                line += csvField(f) + ',';
            line.back() = '\r';
            line += '\n';
            if (Status s = write(line); !s)
                return s;
            after = r.seq;
        }
        if (qsizetype(page->size()) < kPageSize)
            return {};
    }
}

void LocalLedger::addTotalsTo(LocalLedger* ledger, QJsonObject& status) {
    LedgerTotals totals;
    if (ledger)
        if (Result<LedgerTotals> t = ledger->totals(); t)
            totals = *t;
    status.insert(QStringLiteral("credits_total"), double(totals.microCredits) / 1e6);
    status.insert(QStringLiteral("ledger_receipts"), totals.receipts);
}

} // namespace tessera::node
