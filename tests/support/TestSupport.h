// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers every core/ test needs: running a real program, and small file chores.

#include <QByteArray>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace tessera::test {

// QVERIFY2 builds its message even when the check passes: read it only from a failure.
template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

struct ProcessRun {
    int exitCode = -1; // -1: crashed or timed out
    QByteArray out;    // stdout (and stderr too when channels are merged)
    QByteArray err;
};

struct ProcessOptions {
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    bool mergeChannels = false;
    int timeoutMs = 240'000;
};

// Runs `program` to completion. Waits with the event loop running, so a server living in the
// test process keeps answering the program.
ProcessRun runProcess(const QString& program, const QStringList& arguments,
                      const ProcessOptions& options = {});

bool writeFile(const QString& path, const QByteArray& data);
QByteArray readFile(const QString& path); // empty when unreadable
int fileMode(const QString& path);        // permission bits, -1 when absent

} // namespace tessera::test
