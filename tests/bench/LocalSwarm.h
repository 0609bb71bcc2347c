// SPDX-License-Identifier: Apache-2.0
#pragma once
// LocalSwarm: one real tessera-coordinator and its tessera-node processes on loopback, each
// logging to its own file, for benchmarks that measure a whole swarm from the outside.

#include <QJsonObject>
#include <QList>
#include <QNetworkAccessManager>
#include <QProcess>
#include <QSslConfiguration>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

// The built programs (TESSERA_COORDINATOR_PATH and TESSERA_NODE_PATH, set by CMake).
QString swarmCoordinatorProgram();
QString swarmNodeProgram();

// Waits with the event loop running.
void sleepWithEvents(int ms);

class LocalSwarm final {
public:
    // `dir` (emptied first) holds the coordinator's data dir, every node's, and the logs. The coordinator
    // gets
    // --data-dir and --listen 127.0.0.1:0 followed by `coordinatorArguments`.
    LocalSwarm(const QString& dir, const QStringList& coordinatorArguments);
    ~LocalSwarm(); // what is still running is stopped
    LocalSwarm(const LocalSwarm&) = delete;
    LocalSwarm& operator=(const LocalSwarm&) = delete;

    // Starts the coordinator and waits for its "listening on URL"; an error message, or empty.
    QString start();
    const QString& url() const { return m_url; }
    quint16 port() const;
    QString caFile() const;
    QString coordinatorLog() const;
    qint64 coordinatorPid() const { return m_coordinator.processId(); }
    // The coordinator's command line, for printing.
    QString coordinatorCommand() const;
    // A node's command line (its data dir as DIR), for printing.
    static QString nodeCommand(const QString& url, const QString& caFile);

    // A fresh node with its own data dir, reaching the coordinator at `url` (empty: url()), with
    // `environment` added to its own (TESSERA_TEST_MISBEHAVE for a lying node).
    int addNode(const QString& url = {}, const QProcessEnvironment& environment = {});
    void killNode(int index); // SIGKILL: gone mid-task, as a crash or a pulled cable
    bool nodeRunning(int index) const;
    QList<int> runningNodes() const;
    int nodesStarted() const { return int(m_nodes.size()); }
    qint64 nodePid(int index) const;
    QString nodeDir(int index) const;
    QString nodeLog(int index) const;

    // GET path (e.g. /v1/status) over TLS with the coordinator's certificate; empty on failure.
    QJsonObject get(const QString& path);
    // The node's own status (what `tessera-node status --json` prints); empty when it is silent.
    QJsonObject nodeStatus(int index) const;
    // Waits until `count` running nodes report state Working; false after timeoutMs.
    bool waitWorking(int count, int timeoutMs);

    // Nodes first (SIGTERM, then SIGKILL), then the coordinator.
    void stop();

private:
    QString m_dir;
    QStringList m_arguments;
    QProcess m_coordinator;
    QString m_url;
    std::vector<std::unique_ptr<QProcess>> m_nodes;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
};
