// SPDX-License-Identifier: Apache-2.0
#include "CoordinatorProcess.h"

#include <QDir>
#include <QTest>

namespace {
constexpr int kStartMs = 120'000; // the first start writes every stage's shard before it is ready
}

QString coordinatorProgram() {
    return QStringLiteral(TESSERA_COORDINATOR_PATH);
}

CoordinatorProcess::CoordinatorProcess(const QStringList& arguments) {
    // Collected as it comes (whenever the test's event loop runs): a chatty coordinator never
    // blocks on a full pipe.
    QObject::connect(&m_process, &QProcess::readyReadStandardOutput, [this] { readOut(); });
    QObject::connect(&m_process, &QProcess::readyReadStandardError, [this] { readErr(); });
    m_process.setProgram(coordinatorProgram());
    m_process.setArguments(arguments);
    m_process.start();
    // Streamed to a file as well where asked: a run that hangs (and is killed before its test can
    // keep the log) still leaves the coordinator's log to read while it hangs.
    const QString logDir = qEnvironmentVariable("TESSERA_TEST_LOG_DIR");
    if (!logDir.isEmpty()) {
        m_tee.setFileName(
            QDir(logDir).filePath(QStringLiteral("coordinator-%1.log").arg(m_process.processId())));
        if (m_tee.open(QIODevice::WriteOnly | QIODevice::Truncate))
            qWarning("the coordinator's log streams to %s", qPrintable(m_tee.fileName()));
    }
}

void CoordinatorProcess::readOut() {
    const QByteArray chunk = m_process.readAllStandardOutput();
    m_out += chunk;
    tee(chunk);
}

void CoordinatorProcess::readErr() {
    const QByteArray chunk = m_process.readAllStandardError();
    m_err += chunk;
    tee(chunk);
}

void CoordinatorProcess::tee(const QByteArray& chunk) {
    if (m_tee.isOpen() && !chunk.isEmpty()) {
        m_tee.write(chunk);
        m_tee.flush();
    }
}

namespace {

bool hasLine(const QByteArray& out, const QByteArray& start) {
    const qsizetype at = out.startsWith(start) ? 0 : out.indexOf(QByteArray('\n' + start));
    return at >= 0 && out.indexOf('\n', at + 1) >= 0;
}

} // namespace

bool CoordinatorProcess::waitListening() {
    // Either way the checks below tell; the wait only bounds how long.
    (void)QTest::qWaitFor(
        [this] {
            readOut();
            return hasLine(m_out, "listening on ") || m_process.state() == QProcess::NotRunning;
        },
        kStartMs);
    readErr();
    readOut();
    const qsizetype at = m_out.indexOf("listening on ");
    if (at < 0 || m_out.indexOf('\n', at) < 0)
        return false;
    m_url = QString::fromUtf8(m_out.mid(at + 13, m_out.indexOf('\n', at) - at - 13));
    return true;
}

bool CoordinatorProcess::waitReady() {
    if (!waitListening())
        return false;
    (void)QTest::qWaitFor(
        [this] {
            readOut();
            return hasLine(m_out, "ready: ") || m_process.state() == QProcess::NotRunning;
        },
        kStartMs);
    readErr();
    readOut();
    return hasLine(m_out, "ready: ");
}

int CoordinatorProcess::waitExit() {
    m_process.waitForFinished(kStartMs);
    readOut();
    readErr();
    return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
}

int CoordinatorProcess::terminate(int ms) {
    m_process.terminate();
    const bool finished = m_process.waitForFinished(ms);
    readOut();
    readErr();
    if (!finished)
        return -1;
    return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
}

void CoordinatorProcess::stop() {
    if (m_process.state() == QProcess::NotRunning)
        return;
    m_process.terminate();
    if (!m_process.waitForFinished(10'000))
        m_process.kill();
    m_process.waitForFinished(5'000);
}

void CoordinatorProcess::kill() {
    m_process.kill();
    m_process.waitForFinished(10'000);
    readOut();
    readErr();
}

QString CoordinatorProcess::printed(const QByteArray& label) const {
    const qsizetype at = m_out.indexOf(QByteArray("\n" + label + ": "));
    if (at < 0)
        return {};
    const qsizetype from = at + label.size() + 3;
    return QString::fromUtf8(m_out.mid(from, m_out.indexOf('\n', from) - from));
}
