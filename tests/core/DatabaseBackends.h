#pragma once
// DatabaseBackends: the fixture of the coordinator state tests, which run every data-driven test
// once on a fresh SQLite file and once on a fresh database of a throwaway PostgreSQL server.

#include "PostgresServer.h"
#include "Result.h"
#include "coordinator/Database.h"

#include <QString>
#include <QTemporaryDir>

#include <memory>

namespace tessera::test {

// QVERIFY2 builds its message even when the check passes: read it only from a failure.
template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

// Registers a node with placeholder claims: what tests of the tables that refer to nodes need.
Status admitTestNode(coordinator::Database& db, const QString& nodeId);

class DatabaseBackends final {
public:
    // From initTestCase: checks the temporary directory and starts the PostgreSQL server, unless
    // its binaries are absent (then the postgresql rows skip).
    Status start();
    // From cleanupTestCase: stops the PostgreSQL server.
    void stop() { m_pg.reset(); }

    // The test's _data function: a "backend" column with the rows "sqlite" and "postgresql".
    static void addRows();

    // A new, empty database for the current row; empty when the row was skipped or failed.
    QString freshUrl();
    QString freshUrl(const QString& backend);

    // Opens and migrates; null (and the test failed) on error or for an empty url.
    std::unique_ptr<coordinator::Database> open(const QString& url);
    // Opens without migrating; null (and the test failed) on error.
    std::unique_ptr<coordinator::Database> openUnmigrated(const QString& url);

    // The temporary directory, also the data directory of every database opened here.
    const QTemporaryDir& dir() const { return m_dir; }

private:
    QTemporaryDir m_dir;
    std::unique_ptr<PostgresServer> m_pg;
    int m_files = 0;
};

} // namespace tessera::test
