// SPDX-License-Identifier: Apache-2.0
#pragma once
// ProcessScanner: the names of the running processes, kept current cheaply enough to be asked four
// times a second — each process's names are read when it first appears, not on every scan.

#include <QString>
#include <QStringList>

#include <chrono>
#include <optional>
#include <unordered_map>

namespace tessera::manager {

class ProcessScanner {
public:
    // A process's names can change right after it appears (a shell forks, then execs the game;
    // Wine rewrites argv[0] once it has loaded the .exe), so a process's names are read again on
    // every scan until it is this old.
    static constexpr std::chrono::milliseconds kDefaultSettle{3'000};

    // procRoot: Linux's /proc (tests may point it at a folder of their own); unused elsewhere.
    explicit ProcessScanner(QString procRoot = QStringLiteral("/proc"),
                            std::chrono::milliseconds settle = kDefaultSettle);

    // Lists the processes again: reads the names of those not seen before, drops those gone.
    void scan();
    // pid → its names: on Linux the kernel's name (comm, at most 15 characters), the file name of
    // its executable and of argv[0] — a Wine game shows only in the last, as "C:\Games\x.exe" —
    // without duplicates; on Windows and macOS the executable's file name.
    const std::unordered_map<qint64, QStringList>& processes() const { return m_names; }
    // How many times a process's names have been read: the cost the cache saves (tests).
    qint64 nameReads() const { return m_nameReads; }

    // The last component of a path, split on '/' and '\' alike.
    static QString fileName(const QString& path);

private:
    QStringList readNames(qint64 pid) const;
    // How long ago the process started; nullopt when the system does not say.
    std::optional<std::chrono::milliseconds> processAge(qint64 pid) const;

    QString m_procRoot;
    std::chrono::milliseconds m_settle;
    std::unordered_map<qint64, QStringList> m_names;
    // The young processes (not yet settled) and when they started.
    std::unordered_map<qint64, std::chrono::steady_clock::time_point> m_startedAt;
    qint64 m_nameReads = 0;
    bool m_scanned = false;
};

} // namespace tessera::manager
