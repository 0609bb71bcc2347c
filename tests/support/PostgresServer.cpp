// SPDX-License-Identifier: Apache-2.0
#include "PostgresServer.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QVersionNumber>

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>

namespace tessera::test {

namespace {

constexpr int kToolTimeoutMs = 60'000;
const QString kSuperuser = QStringLiteral("tessera");

std::string text(const QString& s) {
    return s.toStdString();
}

QString lastLines(const QString& file, int lines) {
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    const QStringList all = QString::fromUtf8(f.readAll()).split(u'\n', Qt::SkipEmptyParts);
    return all.mid(std::max<qsizetype>(0, all.size() - lines)).join(QStringLiteral(" | "));
}

} // namespace

QString PostgresServer::findBinDir() {
    // Debian keeps the server tools out of PATH, one directory per major version.
    const QDir root(QStringLiteral("/usr/lib/postgresql"));
    QStringList versions = root.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    std::sort(versions.begin(), versions.end(), [](const QString& a, const QString& b) {
        return QVersionNumber::fromString(a) > QVersionNumber::fromString(b);
    });
    for (const QString& v : versions) {
        const QString bin = root.filePath(v + QStringLiteral("/bin"));
        if (QFileInfo(bin + QStringLiteral("/initdb")).isExecutable() &&
            QFileInfo(bin + QStringLiteral("/pg_ctl")).isExecutable())
            return bin;
    }
    const QString initdb = QStandardPaths::findExecutable(QStringLiteral("initdb"));
    if (!initdb.isEmpty() && !QStandardPaths::findExecutable(QStringLiteral("pg_ctl")).isEmpty())
        return QFileInfo(initdb).absolutePath();
    return {};
}

PostgresServer::PostgresServer(QString binDir, std::unique_ptr<QTemporaryDir> dir)
    : m_binDir(std::move(binDir))
    , m_dir(std::move(dir)) {}

QString PostgresServer::dataDir() const {
    return m_dir->filePath(QStringLiteral("data"));
}

QString PostgresServer::socketDir() const {
    return m_dir->path();
}

Result<std::unique_ptr<PostgresServer>> PostgresServer::start() {
    const QString binDir = findBinDir();
    if (binDir.isEmpty())
        return makeError(kNotInstalled);

    // A short path: a unix socket's path must stay under ~107 bytes.
    const QString base = QDir(QStringLiteral("/tmp")).exists() ? QStringLiteral("/tmp") : QDir::tempPath();
    auto dir = std::make_unique<QTemporaryDir>(base + QStringLiteral("/tessera-pg-XXXXXX"));
    if (!dir->isValid())
        return makeError("cannot create a temporary directory: " + text(dir->errorString()));
    std::unique_ptr<PostgresServer> server(new PostgresServer(binDir, std::move(dir)));

    if (::geteuid() == 0) {
        const passwd* account = ::getpwnam("postgres");
        if (!account)
            account = ::getpwnam("nobody");
        if (!account)
            return makeError("running as root, and neither a \"postgres\" nor a \"nobody\" user exists");
        server->m_runAsUid = long(account->pw_uid);
        server->m_runAsGid = long(account->pw_gid);
        const QByteArray path = QFile::encodeName(server->socketDir());
        if (::chown(path.constData(), uid_t(server->m_runAsUid), gid_t(server->m_runAsGid)) != 0)
            return makeError("cannot hand " + path.toStdString() + " to the PostgreSQL user");
    }

    if (Result<QByteArray> r =
            server->runTool(QStringLiteral("initdb"),
                            {QStringLiteral("-D"), server->dataDir(), QStringLiteral("-U"), kSuperuser,
                             QStringLiteral("--auth=trust"), QStringLiteral("--encoding=UTF8"),
                             QStringLiteral("--no-locale"), QStringLiteral("--no-sync")},
                            kToolTimeoutMs);
        !r)
        return r.error();

    // Unix socket only, and no durability: the data dies with the test.
    QFile conf(server->dataDir() + QStringLiteral("/postgresql.conf"));
    if (!conf.open(QIODevice::Append))
        return makeError("cannot configure the test server: " + text(conf.errorString()));
    conf.write("\n# tessera tests\nlisten_addresses = ''\nunix_socket_directories = '" +
               QFile::encodeName(server->socketDir()) +
               "'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 30\n");
    conf.close();

    const QString log = server->m_dir->filePath(QStringLiteral("server.log"));
    if (Result<QByteArray> r = server->runTool(QStringLiteral("pg_ctl"),
                                               {QStringLiteral("-D"), server->dataDir(), QStringLiteral("-l"),
                                                log, QStringLiteral("-w"), QStringLiteral("-t"),
                                                QStringLiteral("30"), QStringLiteral("start")},
                                               kToolTimeoutMs);
        !r)
        return makeError(r.message() + "; server log: " + text(lastLines(log, 5)));
    server->m_running = true;
    return server;
}

Status PostgresServer::stop() {
    Result<QByteArray> r = runTool(QStringLiteral("pg_ctl"),
                                   {QStringLiteral("-D"), dataDir(), QStringLiteral("-m"),
                                    QStringLiteral("fast"), QStringLiteral("-w"), QStringLiteral("stop")},
                                   kToolTimeoutMs);
    if (!r)
        return r.error();
    m_running = false;
    return {};
}

Status PostgresServer::startAgain() {
    const QString log = m_dir->filePath(QStringLiteral("server.log"));
    Result<QByteArray> r =
        runTool(QStringLiteral("pg_ctl"),
                {QStringLiteral("-D"), dataDir(), QStringLiteral("-l"), log, QStringLiteral("-w"),
                 QStringLiteral("-t"), QStringLiteral("30"), QStringLiteral("start")},
                kToolTimeoutMs);
    if (!r)
        return makeError(r.message() + "; server log: " + text(lastLines(log, 5)));
    m_running = true;
    return {};
}

PostgresServer::~PostgresServer() {
    if (m_running) {
        // Immediate: nothing here is worth a clean checkpoint.
        (void)runTool(QStringLiteral("pg_ctl"),
                      {QStringLiteral("-D"), dataDir(), QStringLiteral("-m"), QStringLiteral("immediate"),
                       QStringLiteral("-w"), QStringLiteral("stop")},
                      kToolTimeoutMs);
    }
}

Result<QByteArray> PostgresServer::runTool(const QString& tool, const QStringList& arguments,
                                           int timeoutMs) const {
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.setWorkingDirectory(socketDir());
    if (m_runAsUid >= 0) {
        const uid_t uid = uid_t(m_runAsUid);
        const gid_t gid = gid_t(m_runAsGid);
        // In the forked child, before exec: only async-signal-safe calls here.
        process.setChildProcessModifier([uid, gid] {
            if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)
                ::_exit(126);
        });
    }
    process.start(m_binDir + u'/' + tool, arguments);
    if (!process.waitForStarted(timeoutMs))
        return makeError("cannot run " + text(tool) + ": " + text(process.errorString()));
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        return makeError(text(tool) + " did not finish in time");
    }
    const QByteArray output = process.readAll();
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        return makeError(text(tool) + " failed (exit " + std::to_string(process.exitCode()) +
                         "): " + output.trimmed().right(600).toStdString());
    }
    return output;
}

Result<QString> PostgresServer::createDatabase() {
    const QString name = QStringLiteral("t%1").arg(++m_databases);
    const QString connection = QStringLiteral("tessera-test-postgres-admin");
    Status status;
    {
        QSqlDatabase admin = QSqlDatabase::addDatabase(QStringLiteral("QPSQL"), connection);
        admin.setHostName(socketDir());
        admin.setUserName(kSuperuser);
        admin.setDatabaseName(QStringLiteral("postgres"));
        if (!admin.open()) {
            status = makeError("cannot connect to the test server: " + text(admin.lastError().text()));
        } else {
            // The name is ours (t1, t2, ...), never outside input.
            QSqlQuery q(admin);
            if (!q.exec(QStringLiteral("CREATE DATABASE ") + name))
                status = makeError("CREATE DATABASE failed: " + text(q.lastError().text()));
        }
        admin.close();
    }
    QSqlDatabase::removeDatabase(connection);
    if (!status)
        return status.error();
    return QString(QStringLiteral("postgresql://") + kSuperuser + QStringLiteral("@/") + name +
                   QStringLiteral("?host=") + socketDir());
}

} // namespace tessera::test
