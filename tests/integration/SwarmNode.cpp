// SPDX-License-Identifier: Apache-2.0
#include "SwarmNode.h"

#include "TestSupport.h"

#include <QFile>
#include <QProcessEnvironment>
#include <QTest>
#include <csignal>
#include <sys/types.h>

QString nodeProgram() {
    return QStringLiteral(TESSERA_NODE_PATH);
}

SwarmNode::SwarmNode(const QString& url, const QString& dataDir, const QString& caFile,
                     const QString& logFile)
    : m_dataDir(dataDir)
    , m_logFile(logFile) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    m_process.setProcessEnvironment(env);
    m_process.setProcessChannelMode(QProcess::MergedChannels);
    m_process.setStandardOutputFile(logFile, QIODevice::Append);
    m_process.setProgram(nodeProgram());
    // The shortest benchmark the node accepts, heartbeats every half second (the coordinator's
    // timeout is 3 s), and no throttle: the test measures the swarm, not the user's limit.
    m_process.setArguments({QStringLiteral("run"), QStringLiteral("--coordinator"), url,
                            QStringLiteral("--data-dir"), dataDir, QStringLiteral("--coordinator-ca"), caFile,
                            QStringLiteral("--bench-seconds"), QStringLiteral("0.5"),
                            QStringLiteral("--heartbeat-ms"), QStringLiteral("500"),
                            QStringLiteral("--gpu-limit"), QStringLiteral("100")});
    m_started.start();
    m_process.start();
}

SwarmNode::~SwarmNode() {
    if (running()) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

void SwarmNode::kill() {
    m_process.kill();
    m_process.waitForFinished(5000);
}

void SwarmNode::freeze(bool frozen) {
    if (running())
        ::kill(pid_t(m_process.processId()), frozen ? SIGSTOP : SIGCONT);
}

int SwarmNode::stop(int ms) {
    if (running()) {
        tessera::test::ProcessOptions options;
        options.timeoutMs = ms;
        const tessera::test::ProcessRun r = tessera::test::runProcess(
            nodeProgram(), {QStringLiteral("stop"), QStringLiteral("--data-dir"), m_dataDir}, options);
        if (r.exitCode != 0)
            qWarning("tessera-node stop --data-dir %s: exit %d: %s", qPrintable(m_dataDir), r.exitCode,
                     r.err.constData());
    }
    if (!QTest::qWaitFor([this] { return !running(); }, ms)) {
        qWarning("tessera-node --data-dir %s did not stop within %d ms; its log ends:\n%s",
                 qPrintable(m_dataDir), ms, logTail(4000).constData());
        kill();
        return -2;
    }
    const int code = m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
    if (code != 0) // what the caller's failure cannot show: how the node ended
        qWarning("tessera-node --data-dir %s %s; its log ends:\n%s", qPrintable(m_dataDir),
                 code == -1 ? "crashed" : qPrintable(QStringLiteral("exited with %1").arg(code)),
                 logTail(4000).constData());
    return code;
}

QByteArray SwarmNode::logTail(qsizetype bytes) const {
    return tessera::test::readFile(m_logFile).right(bytes);
}
