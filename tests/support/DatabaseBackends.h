// SPDX-License-Identifier: Apache-2.0
#pragma once
// DatabaseBackends: the fixture of the coordinator state tests, which run every data-driven test
// once on a fresh SQLite file and once on a fresh database of a throwaway PostgreSQL server.

#include "PostgresServer.h"
#include "TestSupport.h"
#include "base/Result.h"
#include "coordinator/store/Database.h"

#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

namespace tessera::test {

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

// The fixture every coordinator store test derives from: the backends started once for the test
// class (the PostgreSQL rows skip, with the reason, where its binaries are absent), then a fresh
// database per data row. Inherited test functions run like the class's own.
class StoreTest : public QObject {
    Q_OBJECT

protected:
    QString freshUrl() { return m_backends.freshUrl(); }
    std::unique_ptr<coordinator::Database> open(const QString& url) { return m_backends.open(url); }
    std::unique_ptr<coordinator::Database> openUnmigrated(const QString& url) {
        return m_backends.openUnmigrated(url);
    }
    DatabaseBackends& backends() { return m_backends; }

private Q_SLOTS:
    void initTestCase() {
        const Status started = m_backends.start();
        QVERIFY2(started, failure(started));
    }
    void cleanupTestCase() { m_backends.stop(); }

private:
    DatabaseBackends m_backends;
};

} // namespace tessera::test
