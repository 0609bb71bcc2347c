// SPDX-License-Identifier: Apache-2.0
#include "TestSupport.h"

#include <QFile>
#include <QProcess>
#include <QTest>

#include <sys/stat.h>

namespace tessera::test {

ProcessRun runProcess(const QString& program, const QStringList& arguments, const ProcessOptions& options) {
    QProcess process;
    process.setProcessEnvironment(options.environment);
    if (options.mergeChannels)
        process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(program, arguments);
    ProcessRun run;
    if (!QTest::qWaitFor([&] { return process.state() == QProcess::NotRunning; }, options.timeoutMs)) {
        process.kill();
        process.waitForFinished();
        return run;
    }
    run.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    run.out = process.readAllStandardOutput();
    run.err = process.readAllStandardError();
    return run;
}

bool writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(data) == data.size();
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

int fileMode(const QString& path) {
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return -1;
    return static_cast<int>(st.st_mode & 07777);
}

} // namespace tessera::test
