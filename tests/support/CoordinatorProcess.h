// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorProcess: one real tessera-coordinator process for a test: listening once it prints its
// URL, ready once it says it admits nodes (a new run writes its initial weights in between).

#include <QByteArray>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>

// The built tessera-coordinator (TESSERA_COORDINATOR_PATH, set by the test's CMake target).
QString coordinatorProgram();

class CoordinatorProcess final {
public:
    explicit CoordinatorProcess(const QStringList& arguments);
    ~CoordinatorProcess() { stop(); }

    // Waits for "listening on URL" and then for "ready: …" (the run serves: admission, shards and
    // sessions answer); false when the process ended first.
    bool waitReady();
    // Waits for "listening on URL" only: the coordinator answers, its run may still be preparing.
    bool waitListening();
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
    // Append what the process wrote since the last read (and tee it: TESSERA_TEST_LOG_DIR).
    void readOut();
    void readErr();
    void tee(const QByteArray& chunk);

    QProcess m_process;
    QFile m_tee;
    QByteArray m_out;
    QByteArray m_err;
    QString m_url;
};
