// SPDX-License-Identifier: Apache-2.0
#pragma once
// SwarmNode: one real `tessera-node run` process of the swarm test, its output kept in a log file.

#include <QByteArray>
#include <QElapsedTimer>
#include <QProcess>
#include <QString>
#include <QStringList>

// The built tessera-node (TESSERA_NODE_PATH, set by the test's CMake target).
QString nodeProgram();

class SwarmNode final {
public:
    // Starts `tessera-node run` against url with its own data dir; stdout and stderr go to logFile.
    // OMP_NUM_THREADS=1: eight nodes share a machine's few cores.
    SwarmNode(const QString& url, const QString& dataDir, const QString& caFile, const QString& logFile);
    ~SwarmNode();
    SwarmNode(const SwarmNode&) = delete;
    SwarmNode& operator=(const SwarmNode&) = delete;

    const QString& dataDir() const { return m_dataDir; }
    const QString& logFile() const { return m_logFile; }
    bool running() const { return m_process.state() != QProcess::NotRunning; }
    qint64 ageMs() const { return m_started.elapsed(); }
    // SIGKILL: the node vanishes mid-task, as a crash, a power cut or a pulled cable would do.
    void kill();
    // SIGSTOP / SIGCONT: a node that hangs (a frozen machine, a stalled link) keeps its work in flight.
    void freeze(bool frozen);
    // `tessera-node stop --data-dir` through the control socket, then waits for the process: its
    // exit code, -1 when it crashed, -2 when it was still running after ms (it is killed then).
    int stop(int ms);
    // The last `bytes` of its log.
    QByteArray logTail(qsizetype bytes = 3000) const;

private:
    QProcess m_process;
    QString m_dataDir;
    QString m_logFile;
    QElapsedTimer m_started;
};
