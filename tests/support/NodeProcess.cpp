// SPDX-License-Identifier: Apache-2.0
#include "NodeProcess.h"

#include <QDir>
#include <QTest>

QString nodeProgram() {
    return QStringLiteral(TESSERA_NODE_PATH);
}

QProcessEnvironment oneComputeThread() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    return env;
}

NodeProcess::NodeProcess(const QString& url, const QString& dataDir, const QString& caFile,
                         const QStringList& extra, const QProcessEnvironment& environment) {
    m_process.setProgram(nodeProgram());
    m_process.setArguments(
        QStringList{QStringLiteral("run"), QStringLiteral("--coordinator"), url, QStringLiteral("--data-dir"),
                    dataDir, QStringLiteral("--coordinator-ca"), caFile, QStringLiteral("--bench-seconds"),
                    QStringLiteral("0.5"), QStringLiteral("--heartbeat-ms"), QStringLiteral("500")} +
        extra);
    m_process.setProcessEnvironment(environment);
    m_process.setProcessChannelMode(QProcess::MergedChannels);
    m_process.start();
    // Streamed to a file as well where asked (see CoordinatorProcess): read as it comes.
    const QString logDir = qEnvironmentVariable("TESSERA_TEST_LOG_DIR");
    if (!logDir.isEmpty()) {
        m_tee.setFileName(QDir(logDir).filePath(QStringLiteral("node-%1.log").arg(m_process.processId())));
        if (m_tee.open(QIODevice::WriteOnly | QIODevice::Truncate))
            QObject::connect(&m_process, &QProcess::readyRead, [this] { log(); });
    }
}

NodeProcess::~NodeProcess() {
    kill();
}

QByteArray NodeProcess::log() {
    const QByteArray chunk = m_process.readAll();
    m_log += chunk;
    if (m_tee.isOpen() && !chunk.isEmpty()) {
        m_tee.write(chunk);
        m_tee.flush();
    }
    return m_log;
}

void NodeProcess::kill() {
    if (!running())
        return;
    m_process.kill();
    m_process.waitForFinished(5000);
    log();
}

int NodeProcess::waitExit(int ms) {
    (void)QTest::qWaitFor([this] { return !running(); }, ms);
    log();
    if (running())
        return -2;
    return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
}
