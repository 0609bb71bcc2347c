// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorProcess: one real tessera-coordinator process for a test, ready once it prints its URL.

#include <QByteArray>
#include <QProcess>
#include <QString>
#include <QStringList>

// The built tessera-coordinator (TESSERA_COORDINATOR_PATH, set by the test's CMake target).
QString coordinatorProgram();

class CoordinatorProcess final {
public:
    explicit CoordinatorProcess(const QStringList& arguments);
    ~CoordinatorProcess() { stop(); }

    // Waits for "listening on URL"; false when the process ended first.
    bool waitReady();
    // For a start that must fail: the exit code, stderr collected.
    int waitExit();
    void stop();
    // SIGKILL: the coordinator vanishes mid-request, as a crash or power cut would do.
    void kill();
    qint64 pid() const { return m_process.processId(); }
    // Sends SIGTERM; the exit code when it exits normally within ms, else -1.
    int terminate(int ms);
    // The value printed after "label: " on its own line.
    QString printed(const QByteArray& label) const;
    const QString& url() const { return m_url; }
    const QByteArray& out() const { return m_out; }
    const QByteArray& err() const { return m_err; }

private:
    QProcess m_process;
    QByteArray m_out;
    QByteArray m_err;
    QString m_url;
};
