// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/Database.h"

#include "common/Sql.h"
#include "coordinator/store/Migrations.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSqlError>
#include <QStringList>
#include <QUrl>
#include <QUrlQuery>

#include <atomic>

namespace tessera::coordinator {

namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr int kConnectTimeoutS = 10;

std::string text(const QString& s) {
    return s.toStdString();
}

QString nextConnectionName() {
    static std::atomic<quint64> counter{0};
    return QStringLiteral("tessera-coordinator-db-%1").arg(counter.fetch_add(1) + 1);
}

Status driverAvailable(const QString& driver, const char* package) {
    if (QSqlDatabase::isDriverAvailable(driver))
        return {};
    return makeError("the Qt SQL driver " + text(driver) + " is not installed (Debian: " + package + ")");
}

struct PostgresTarget {
    QString host; // a name, an address, or a unix socket directory
    int port = -1;
    QString user;
    QString password;
    QString database;
    QStringList options; // libpq "key=value" connection options
    QString displayName;
};

Result<PostgresTarget> parsePostgresUrl(const QString& urlText) {
    const QUrl url(urlText, QUrl::StrictMode);
    if (!url.isValid()) {
        // Qt appends the whole url ("; source was ..."), password included: keep only the reason.
        return makeError("invalid PostgreSQL url: " + text(url.errorString().section(u';', 0, 0)) +
                         " (percent-encode special characters in the user name and password)");
    }
    PostgresTarget t;
    t.host = url.host(QUrl::FullyDecoded);
    t.port = url.port(-1);
    t.user = url.userName(QUrl::FullyDecoded);
    t.password = url.password(QUrl::FullyDecoded);
    t.database = url.path(QUrl::FullyDecoded).mid(1);
    t.displayName = url.toString(QUrl::RemovePassword);
    if (t.database.isEmpty() || t.database.contains(u'/'))
        return makeError("PostgreSQL url " + text(t.displayName) +
                         " names no database; expected postgresql://user@host[:port]/dbname");

    // Values go into a libpq connection string that Qt assembles without quoting options, so
    // they are held to a plain alphabet.
    static const QRegularExpression plain(
        QRegularExpression::anchoredPattern(QStringLiteral("[A-Za-z0-9_.-]+")));
    const QUrlQuery query(url);
    for (const auto& [key, value] : query.queryItems(QUrl::FullyDecoded)) {
        if (key == u"host") {
            t.host = value;
        } else if (key == u"sslmode" || key == u"connect_timeout" || key == u"application_name") {
            if (!plain.match(value).hasMatch())
                return makeError("PostgreSQL url parameter " + text(key) + " has an unsupported value");
            t.options << key + u'=' + value;
        } else {
            return makeError("PostgreSQL url parameter " + text(key) +
                             " is not supported (supported: host, sslmode, connect_timeout, "
                             "application_name)");
        }
    }
    if (!query.hasQueryItem(QStringLiteral("connect_timeout")))
        t.options << QStringLiteral("connect_timeout=%1").arg(kConnectTimeoutS);
    return t;
}

} // namespace

Database::Database(Backend backend, QString connectionName, QString displayName)
    : m_backend(backend)
    , m_connectionName(std::move(connectionName))
    , m_displayName(std::move(displayName)) {}

Database::~Database() {
    m_db.close();
    // Every handle on the connection must be gone before Qt forgets its name.
    m_db = QSqlDatabase();
    QSqlDatabase::removeDatabase(m_connectionName);
}

Result<std::unique_ptr<Database>> Database::open(const QString& url, const QString& dataDir) {
    const bool isSqlite = url.isEmpty() || url.startsWith(QStringLiteral("sqlite:"));
    const bool isPostgres =
        url.startsWith(QStringLiteral("postgresql://")) || url.startsWith(QStringLiteral("postgres://"));

    if (isSqlite) {
        if (Status s = driverAvailable(QStringLiteral("QSQLITE"), "libqt6sql6-sqlite"); !s)
            return s.error();
        QString path = url.mid(QStringLiteral("sqlite:").size());
        if (path.isEmpty())
            path = QStringLiteral("coordinator.sqlite");
        if (QFileInfo(path).isRelative())
            path = QDir(dataDir).filePath(path);
        path = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
        const QString dir = QFileInfo(path).absolutePath();
        if (!QDir().mkpath(dir))
            return makeError("cannot create the database directory " + text(dir));

        std::unique_ptr<Database> db(
            new Database(Backend::Sqlite, nextConnectionName(), QStringLiteral("sqlite:") + path));
        db->m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), db->m_connectionName);
        db->m_db.setDatabaseName(path);
        if (!db->m_db.open())
            return sql::error(QStringLiteral("cannot open ") + db->m_displayName, db->m_db.lastError());
        if (Status s = db->configureSqlite(); !s)
            return makeError("cannot use " + text(db->m_displayName) + ": " + s.message());
        return db;
    }

    if (isPostgres) {
        if (Status s = driverAvailable(QStringLiteral("QPSQL"), "libqt6sql6-psql"); !s)
            return s.error();
        Result<PostgresTarget> target = parsePostgresUrl(url);
        if (!target)
            return target.error();
        std::unique_ptr<Database> db(
            new Database(Backend::Postgres, nextConnectionName(), target->displayName));
        db->m_db = QSqlDatabase::addDatabase(QStringLiteral("QPSQL"), db->m_connectionName);
        db->m_db.setHostName(target->host);
        if (target->port > 0)
            db->m_db.setPort(target->port);
        db->m_db.setUserName(target->user);
        db->m_db.setPassword(target->password);
        db->m_db.setDatabaseName(target->database);
        db->m_db.setConnectOptions(target->options.join(u';'));
        if (!db->m_db.open())
            return sql::error(QStringLiteral("cannot connect to ") + db->m_displayName, db->m_db.lastError());
        // libpq prints server notices ("relation already exists, skipping") on stderr.
        if (Result<QSqlQuery> q = sql::exec(db->m_db, QStringLiteral("SET client_min_messages TO WARNING"));
            !q)
            return q.error();
        return db;
    }

    // Only the scheme: the rest of an unknown url may hold a password.
    const QString scheme = QUrl(url).scheme();
    return makeError((scheme.isEmpty() ? std::string("database url has no scheme")
                                       : "unsupported database url scheme \"" + text(scheme) + '"') +
                     "; expected sqlite:PATH or postgresql://user@host[:port]/dbname");
}

Status Database::configureSqlite() {
    // WAL: readers never block the writer, and a crash mid-write leaves the last commit intact.
    // synchronous=NORMAL is durable in WAL mode except for the last commits on power loss.
    Result<std::optional<QVariant>> mode = sql::scalar(m_db, QStringLiteral("PRAGMA journal_mode = WAL"));
    if (!mode)
        return mode.error();
    if (!*mode || (*mode)->toString().compare(u"wal", Qt::CaseInsensitive) != 0)
        return makeError("the file system does not support SQLite's WAL mode");
    for (const QString& pragma :
         {QStringLiteral("PRAGMA synchronous = NORMAL"), QStringLiteral("PRAGMA foreign_keys = ON"),
          QStringLiteral("PRAGMA busy_timeout = %1").arg(kBusyTimeoutMs)}) {
        if (Result<QSqlQuery> q = sql::exec(m_db, pragma); !q)
            return q.error();
    }
    return {};
}

int Database::latestSchemaVersion() {
    return migrations().back().version;
}

Result<int> Database::schemaVersion() {
    if (!m_db.tables().contains(QStringLiteral("schema_migrations")))
        return 0;
    Result<std::optional<QVariant>> v =
        sql::scalar(m_db, QStringLiteral("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
    if (!v)
        return v.error();
    return *v ? (*v)->toInt() : 0;
}

Result<qint64> Database::latestStoredTimeMs() {
    // Every table where a time decides something later: leases, heartbeats, audits' coverage of
    // escrow, bans, receipts, steps. Read once, at a start. (0 for a new database.)
    Result<std::optional<QVariant>> v =
        sql::scalar(m_db, QStringLiteral("SELECT MAX(t) FROM ("
                                         "SELECT MAX(last_seen) AS t FROM nodes UNION ALL "
                                         "SELECT MAX(last_heartbeat) FROM sessions UNION ALL "
                                         "SELECT MAX(created_at) FROM sessions UNION ALL "
                                         "SELECT MAX(issued_at) FROM microbatches UNION ALL "
                                         "SELECT MAX(accepted_at) FROM accepted_tasks UNION ALL "
                                         "SELECT MAX(audited_through) FROM reputation UNION ALL "
                                         "SELECT MAX(backward_audited_through) FROM reputation UNION ALL "
                                         "SELECT MAX(updated_at) FROM reputation UNION ALL "
                                         "SELECT MAX(issued_at) FROM credit_receipts UNION ALL "
                                         "SELECT MAX(updated_at) FROM training_state) AS stored"));
    if (!v)
        return v.error();
    return *v && !(*v)->isNull() ? (*v)->toLongLong() : 0;
}

Result<int> Database::migrate() {
    if (Result<QSqlQuery> q = sql::exec(m_db, QStringLiteral("CREATE TABLE IF NOT EXISTS schema_migrations ("
                                                             " version INTEGER PRIMARY KEY,"
                                                             " applied_at BIGINT NOT NULL)"));
        !q)
        return q.error();
    Result<int> current = schemaVersion();
    if (!current)
        return current.error();
    if (*current > latestSchemaVersion()) {
        return makeError("the database " + text(m_displayName) + " has schema version " +
                         std::to_string(*current) + ", newer than this coordinator understands (" +
                         std::to_string(latestSchemaVersion()) +
                         "); run a newer tessera-coordinator, or restore a backup made before the upgrade");
    }

    int applied = 0;
    for (const Migration& m : migrations()) {
        if (m.version <= *current)
            continue;
        bool alreadyApplied = false;
        Status s = writeTransaction([&]() -> Status {
            if (m_backend == Backend::Postgres) {
                // Two coordinators starting at once: the second waits here, then sees the work done.
                if (Result<QSqlQuery> q = sql::exec(
                        m_db, QStringLiteral("LOCK TABLE schema_migrations IN SHARE ROW EXCLUSIVE MODE"));
                    !q)
                    return q.error();
            }
            Result<int> now = schemaVersion();
            if (!now)
                return now.error();
            if (*now >= m.version) {
                alreadyApplied = true;
                return {};
            }
            for (const char* statement : m.statements) {
                if (Result<QSqlQuery> q = sql::exec(m_db, QString::fromUtf8(statement)); !q)
                    return q.error();
            }
            Result<QSqlQuery> q = sql::exec(
                m_db, QStringLiteral("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"),
                {m.version, QDateTime::currentMSecsSinceEpoch()});
            return q ? Status() : Status(q.error());
        });
        if (!s) {
            return makeError("migration " + std::to_string(m.version) + " (" + m.description + ") of " +
                             text(m_displayName) + " failed and was rolled back: " + s.message());
        }
        if (!alreadyApplied)
            ++applied;
    }
    return applied;
}

Status Database::writeTransaction(const std::function<Status()>& body) {
    // Nested: part of the outer transaction, which commits or rolls back the whole.
    if (m_transactionDepth > 0) {
        ++m_transactionDepth;
        Status s = body();
        --m_transactionDepth;
        return s;
    }
    const QString begin =
        m_backend == Backend::Sqlite ? QStringLiteral("BEGIN IMMEDIATE") : QStringLiteral("BEGIN");
    if (Result<QSqlQuery> q = sql::exec(m_db, begin); !q) {
        // A PostgreSQL server restarted (or a connection cut) leaves this one dead for good: open it
        // again, once, before anything of the transaction ran. Callers keep what they could not write
        // (TrainingStore retries it at its next flush).
        if (m_backend != Backend::Postgres)
            return q.error();
        m_db.close();
        if (!m_db.open())
            return makeError(q.message() + "; connecting again failed: " + text(m_db.lastError().text()));
        (void)sql::exec(m_db, QStringLiteral("SET client_min_messages TO WARNING"));
        qInfo("database: connected to %s again", qPrintable(m_displayName));
        if (Result<QSqlQuery> again = sql::exec(m_db, begin); !again)
            return again.error();
    }
    ++m_transactionDepth;
    Status s = body();
    --m_transactionDepth;
    if (s) {
        Result<QSqlQuery> commit = sql::exec(m_db, QStringLiteral("COMMIT"));
        if (commit)
            return {};
        s = commit.error();
    }
    // The body's error is the one to report; a failed rollback ends in the connection's close.
    (void)sql::exec(m_db, QStringLiteral("ROLLBACK"));
    return s;
}

} // namespace tessera::coordinator
