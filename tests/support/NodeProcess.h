// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeProcess: one real `tessera-node run` process for a test, its output (the log) collected.

#include <QByteArray>
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

// The built tessera-node (TESSERA_NODE_PATH, set by the test's CMake target).
QString nodeProgram();
// The test's environment with OMP_NUM_THREADS=1: several nodes share a small machine's cores.
QProcessEnvironment oneComputeThread();

class NodeProcess final {
public:
    // `tessera-node run` against url with its own data dir, a short benchmark and 500 ms
    // heartbeats, plus `extra` arguments.
    NodeProcess(const QString& url, const QString& dataDir, const QString& caFile,
                const QStringList& extra = {},
                const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment());
    ~NodeProcess();
    NodeProcess(const NodeProcess&) = delete;
    NodeProcess& operator=(const NodeProcess&) = delete;

    QByteArray log();
    bool running() const { return m_process.state() != QProcess::NotRunning; }
    // SIGKILL: the node vanishes, as a crash or power cut would make it.
    void kill();
    // Its exit code once it exits within ms; -1 when it crashed, -2 when still running.
    int waitExit(int ms);

private:
    QProcess m_process;
    QByteArray m_log;
    QFile m_tee; // TESSERA_TEST_LOG_DIR's copy of the log
};
