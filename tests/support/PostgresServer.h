// SPDX-License-Identifier: Apache-2.0
#pragma once
// PostgresServer: a throwaway PostgreSQL server for tests, reachable only on a unix socket in
// its own temporary directory, stopped and deleted with the object.

#include "base/Result.h"

#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <memory>

namespace tessera::test {

class PostgresServer final {
public:
    // The directory holding initdb and pg_ctl (newest /usr/lib/postgresql/*/bin, else PATH);
    // empty when PostgreSQL is not installed, which tests take as a reason to skip.
    static QString findBinDir();
    static constexpr const char* kNotInstalled =
        "PostgreSQL server binaries not found (Debian: apt-get install postgresql)";

    // initdb + pg_ctl start, in a few seconds. PostgreSQL refuses to run as root: as root, the
    // server runs as the "postgres" user (or "nobody") and owns the temporary directory.
    static Result<std::unique_ptr<PostgresServer>> start();
    ~PostgresServer();
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    // A new, empty database; returns its url, e.g. postgresql://tessera@/t3?host=/tmp/tessera-pg-x
    Result<QString> createDatabase();
    // Stops the server as an operator's restart does (fast: clients disconnected, committed data
    // kept), and starts it again on the same data and socket.
    Status stop();
    Status startAgain();

private:
    PostgresServer(QString binDir, std::unique_ptr<QTemporaryDir> dir);
    Result<QByteArray> runTool(const QString& tool, const QStringList& arguments, int timeoutMs) const;
    QString dataDir() const;
    QString socketDir() const;

    QString m_binDir;
    std::unique_ptr<QTemporaryDir> m_dir;
    bool m_running = false;
    int m_databases = 0;
    // The account the server runs as when the tests run as root; -1: run as ourselves.
    long m_runAsUid = -1;
    long m_runAsGid = -1;
};

} // namespace tessera::test
