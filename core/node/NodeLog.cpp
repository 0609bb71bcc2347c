// SPDX-License-Identifier: Apache-2.0
#include "node/NodeLog.h"

#include <QDateTime>
#include <QFile>
#include <QMutex>

#include <cstdio>

namespace tessera::node {

namespace {

struct LogState {
    QMutex mutex;
    LogSettings settings;
    QFile file;
};

LogState& state() {
    static LogState s;
    return s;
}

void rotate(LogState& s) {
    s.file.close();
    for (int i = s.settings.keep; i >= 1; --i) {
        const QString from = i == 1 ? s.settings.path : s.settings.path + u'.' + QString::number(i - 1);
        const QString to = s.settings.path + u'.' + QString::number(i);
        QFile::remove(to);
        QFile::rename(from, to);
    }
    s.file.open(QIODevice::WriteOnly | QIODevice::Append);
}

const char* levelName(QtMsgType type) {
    switch (type) {
    case QtDebugMsg: return "debug";
    case QtInfoMsg: return "info";
    case QtWarningMsg: return "warning";
    case QtCriticalMsg: return "error";
    case QtFatalMsg: return "fatal";
    }
    return "info";
}

void handler(QtMsgType type, const QMessageLogContext&, const QString& message) {
    const QByteArray line = QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs).toUtf8() + ' ' +
                            levelName(type) + ": " + message.toUtf8() + '\n';
    LogState& s = state();
    QMutexLocker lock(&s.mutex);
    std::fwrite(line.constData(), 1, size_t(line.size()), stderr);
    std::fflush(stderr);
    if (s.file.isOpen()) {
        if (s.file.size() + line.size() > s.settings.maxBytes)
            rotate(s);
        s.file.write(line);
        s.file.flush();
    }
    if (type == QtFatalMsg)
        std::abort();
}

} // namespace

void installNodeLog(const LogSettings& settings) {
    LogState& s = state();
    {
        QMutexLocker lock(&s.mutex);
        s.settings = settings;
        s.file.setFileName(settings.path);
        if (!s.file.open(QIODevice::WriteOnly | QIODevice::Append))
            std::fprintf(stderr, "warning: cannot write the log file %s: %s\n", qPrintable(settings.path),
                         qPrintable(s.file.errorString()));
    }
    qInstallMessageHandler(handler);
}

} // namespace tessera::node
