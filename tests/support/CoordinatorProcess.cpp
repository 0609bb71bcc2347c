// SPDX-License-Identifier: Apache-2.0
#include "CoordinatorProcess.h"

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
    QObject::connect(&m_process, &QProcess::readyReadStandardOutput,
                     [this] { m_out += m_process.readAllStandardOutput(); });
    QObject::connect(&m_process, &QProcess::readyReadStandardError,
                     [this] { m_err += m_process.readAllStandardError(); });
    m_process.setProgram(coordinatorProgram());
    m_process.setArguments(arguments);
    m_process.start();
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
            m_out += m_process.readAllStandardOutput();
            return hasLine(m_out, "listening on ") || m_process.state() == QProcess::NotRunning;
        },
        kStartMs);
    m_err += m_process.readAllStandardError();
    m_out += m_process.readAllStandardOutput();
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
            m_out += m_process.readAllStandardOutput();
            return hasLine(m_out, "ready: ") || m_process.state() == QProcess::NotRunning;
        },
        kStartMs);
    m_err += m_process.readAllStandardError();
    m_out += m_process.readAllStandardOutput();
    return hasLine(m_out, "ready: ");
}

int CoordinatorProcess::waitExit() {
    m_process.waitForFinished(kStartMs);
    m_out += m_process.readAllStandardOutput();
    m_err += m_process.readAllStandardError();
    return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
}

int CoordinatorProcess::terminate(int ms) {
    m_process.terminate();
    const bool finished = m_process.waitForFinished(ms);
    m_out += m_process.readAllStandardOutput();
    m_err += m_process.readAllStandardError();
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
    m_out += m_process.readAllStandardOutput();
    m_err += m_process.readAllStandardError();
}

QString CoordinatorProcess::printed(const QByteArray& label) const {
    const qsizetype at = m_out.indexOf(QByteArray("\n" + label + ": "));
    if (at < 0)
        return {};
    const qsizetype from = at + label.size() + 3;
    return QString::fromUtf8(m_out.mid(from, m_out.indexOf('\n', from) - from));
}
