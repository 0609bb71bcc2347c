// SPDX-License-Identifier: Apache-2.0
#include "DatabaseBackends.h"

#include "coordinator/store/NodeRegistry.h"

#include <QTest>

namespace tessera::test {

using coordinator::Database;

Status DatabaseBackends::start() {
    if (!m_dir.isValid())
        return makeError("cannot create a temporary directory: " + m_dir.errorString().toStdString());
    if (PostgresServer::findBinDir().isEmpty())
        return {}; // the postgresql rows skip
    Result<std::unique_ptr<PostgresServer>> pg = PostgresServer::start();
    if (!pg)
        return pg.error();
    m_pg = std::move(*pg);
    return {};
}

void DatabaseBackends::addRows() {
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
    QTest::newRow("postgresql") << QStringLiteral("postgresql");
}

QString DatabaseBackends::freshUrl() {
    QFETCH(QString, backend);
    return freshUrl(backend);
}

QString DatabaseBackends::freshUrl(const QString& backend) {
    if (backend == u"sqlite")
        return QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("db%1.sqlite").arg(++m_files));
    if (!m_pg) {
        QTest::qSkip(PostgresServer::kNotInstalled, __FILE__, __LINE__);
        return {};
    }
    Result<QString> url = m_pg->createDatabase();
    if (!url) {
        QTest::qFail(url.message().c_str(), __FILE__, __LINE__);
        return {};
    }
    return *url;
}

std::unique_ptr<Database> DatabaseBackends::open(const QString& url) {
    if (url.isEmpty())
        return nullptr;
    Result<std::unique_ptr<Database>> db = Database::open(url, m_dir.path());
    Result<int> migrated = db ? (*db)->migrate() : Result<int>(db.error());
    if (!migrated) {
        QTest::qFail(migrated.message().c_str(), __FILE__, __LINE__);
        return nullptr;
    }
    return std::move(*db);
}

std::unique_ptr<Database> DatabaseBackends::openUnmigrated(const QString& url) {
    Result<std::unique_ptr<Database>> db = Database::open(url, m_dir.path());
    if (!db) {
        QTest::qFail(db.message().c_str(), __FILE__, __LINE__);
        return nullptr;
    }
    return std::move(*db);
}

Status admitTestNode(coordinator::Database& db, const QString& nodeId) {
    return coordinator::NodeRegistry(db).admit(
        {nodeId, QStringLiteral("pk"), QStringLiteral("{}"), QStringLiteral("{}"), QStringLiteral("0.2.0")},
        0);
}

} // namespace tessera::test
