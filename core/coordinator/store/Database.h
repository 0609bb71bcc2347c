// SPDX-License-Identifier: Apache-2.0
#pragma once
// Database: the coordinator's SQL connection (SQLite file or PostgreSQL server) and its schema.
//
// A Database belongs to the thread that opened it (the coordinator's): Qt SQL connections must
// not cross threads. Open one Database per thread if more are ever needed; each gets its own
// connection name.

#include "base/Result.h"

#include <QSqlDatabase>
#include <QString>

#include <functional>
#include <memory>

namespace tessera::coordinator {

class Database final {
public:
    enum class Backend { Sqlite, Postgres };

    // url: "sqlite:PATH" (relative PATH is under dataDir; an empty url means
    // dataDir/coordinator.sqlite) or "postgresql://user[:password]@host[:port]/dbname", where
    // "?host=/socket/dir" reaches a server over its unix socket. Opening does not migrate.
    static Result<std::unique_ptr<Database>> open(const QString& url, const QString& dataDir);

    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    Backend backend() const { return m_backend; }
    // The url without its password, for logs and error messages.
    const QString& displayName() const { return m_displayName; }
    QSqlDatabase connection() const { return m_db; }

    // Brings the schema to the newest version this build knows, each migration in its own
    // transaction. Returns how many were applied (0 when already current). A database written
    // by a newer coordinator is refused rather than half-understood.
    Result<int> migrate();
    // Closes the connection (SQLite checkpoints its WAL); every later statement fails.
    void close() { m_db.close(); }
    // 0 for an empty database.
    Result<int> schemaVersion();
    static int latestSchemaVersion();
    // The latest time stored in any table (ms since the epoch; 0 when none): a restarted coordinator's
    // clock starts no earlier (common/WallClock), whatever the system clock reads. Needs the schema.
    Result<qint64> latestStoredTimeMs();

    // Runs body inside a write transaction: committed when it returns ok, else rolled back.
    // SQLite takes the write lock up front (BEGIN IMMEDIATE) so that two connections reading
    // then writing wait on each other instead of failing on a lock upgrade. A call inside the
    // body joins the outer transaction.
    Status writeTransaction(const std::function<Status()>& body);

private:
    Database(Backend backend, QString connectionName, QString displayName);
    Status configureSqlite();

    Backend m_backend;
    QString m_connectionName;
    QString m_displayName;
    QSqlDatabase m_db;
    int m_transactionDepth = 0; // writeTransaction nesting: only the outermost commits
};

} // namespace tessera::coordinator
