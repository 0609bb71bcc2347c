// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/ProcessScanner.h"

#include <QByteArray>
#include <QFile>

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

#if defined(Q_OS_WIN)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
// windows.h first: tlhelp32.h relies on its types.
#include <tlhelp32.h>
#elif defined(Q_OS_MACOS)
#include <libproc.h>
#include <sys/param.h>
#include <sys/time.h>
#elif defined(Q_OS_LINUX)
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#endif

namespace tessera::manager {

namespace {

// pid, and its name where the listing gives it for free (Windows); empty: read it separately.
using Listing = std::vector<std::pair<qint64, QString>>;

#if defined(Q_OS_LINUX)
// /proc's files are small and generated on read: one read() of a plain fd is all they need (no
// QFile, whose buffering would cost more than the read itself four times a second).
QByteArray readSmallFile(const QByteArray& path, int maxBytes) {
    const int fd = ::open(path.constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return {};
    QByteArray data(maxBytes, Qt::Uninitialized);
    const ssize_t n = ::read(fd, data.data(), static_cast<size_t>(maxBytes));
    ::close(fd);
    if (n <= 0)
        return {};
    data.truncate(static_cast<qsizetype>(n));
    return data;
}

Listing listProcesses(const QByteArray& procRoot) {
    Listing out;
    DIR* dir = ::opendir(procRoot.constData());
    if (!dir)
        return out;
    while (const dirent* entry = ::readdir(dir)) {
        qint64 pid = 0;
        const char* c = entry->d_name;
        for (; *c >= '0' && *c <= '9'; ++c)
            pid = pid * 10 + (*c - '0');
        if (*c == '\0' && c != entry->d_name) // all digits: a process, not "self" or "cpuinfo"
            out.emplace_back(pid, QString());
    }
    ::closedir(dir);
    return out;
}
#elif defined(Q_OS_WIN)
Listing listProcesses(const QByteArray&) {
    Listing out;
    const HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    if (snapshot == INVALID_HANDLE_VALUE)
        return out;
    PROCESSENTRY32W entry{};
    entry.dwSize = sizeof entry;
    for (BOOL more = Process32FirstW(snapshot, &entry); more; more = Process32NextW(snapshot, &entry))
        out.emplace_back(static_cast<qint64>(entry.th32ProcessID), QString::fromWCharArray(entry.szExeFile));
    CloseHandle(snapshot);
    return out;
}
#elif defined(Q_OS_MACOS)
Listing listProcesses(const QByteArray&) {
    Listing out;
    const int estimate = proc_listallpids(nullptr, 0);
    if (estimate <= 0)
        return out;
    std::vector<pid_t> pids(static_cast<size_t>(estimate) + 64); // room for processes started since
    const int count = proc_listallpids(pids.data(), static_cast<int>(pids.size() * sizeof(pid_t)));
    for (int i = 0; i < count && i < static_cast<int>(pids.size()); ++i)
        if (pids[i] > 0)
            out.emplace_back(static_cast<qint64>(pids[i]), QString());
    return out;
}
#else
Listing listProcesses(const QByteArray&) {
    return {}; // no process listing on this platform: the rule never pauses
}
#endif

} // namespace

ProcessScanner::ProcessScanner(QString procRoot, std::chrono::milliseconds settle)
    : m_procRoot(std::move(procRoot))
    , m_settle(settle) {}

QString ProcessScanner::fileName(const QString& path) {
    const qsizetype slash = std::max(path.lastIndexOf(QLatin1Char('/')), path.lastIndexOf(QLatin1Char('\\')));
    return path.mid(slash + 1);
}

void ProcessScanner::scan() {
    const auto now = std::chrono::steady_clock::now();
    const Listing listing = listProcesses(QFile::encodeName(m_procRoot));
    std::unordered_set<qint64> alive;
    alive.reserve(listing.size());
    for (const auto& [pid, listedName] : listing) {
        alive.insert(pid);
        if (!listedName.isEmpty()) {
            m_names[pid] = QStringList{listedName};
            continue;
        }
        const bool known = m_names.contains(pid);
        auto young = m_startedAt.find(pid);
        if (known && young == m_startedAt.end())
            continue; // settled: its names are cached
        if (!known) {
            // Where the age is unknown, one that appears now has just started, but one running
            // before the first scan has most likely been running for a while.
            const auto age = processAge(pid).value_or(m_scanned ? std::chrono::milliseconds(0) : m_settle);
            if (age < m_settle)
                young = m_startedAt.emplace(pid, now - age).first;
        }
        m_names[pid] = readNames(pid);
        ++m_nameReads;
        if (young != m_startedAt.end() && now - young->second >= m_settle)
            m_startedAt.erase(young);
    }
    m_scanned = true;
    std::erase_if(m_names, [&](const auto& entry) { return !alive.contains(entry.first); });
    std::erase_if(m_startedAt, [&](const auto& entry) { return !alive.contains(entry.first); });
}

std::optional<std::chrono::milliseconds> ProcessScanner::processAge(qint64 pid) const {
#if defined(Q_OS_LINUX)
    // Field 22 of stat is the start in clock ticks after boot; the name before it (field 2, in
    // parentheses) may hold spaces and parentheses itself, so fields are counted after the last ')'.
    const QByteArray stat =
        readSmallFile(QFile::encodeName(m_procRoot) + '/' + QByteArray::number(pid) + "/stat", 1024);
    const qsizetype nameEnd = stat.lastIndexOf(')');
    if (nameEnd < 0)
        return std::nullopt;
    const QList<QByteArray> fields = stat.mid(nameEnd + 2).split(' ');
    bool ok = false;
    const qint64 startTicks = fields.size() > 19 ? fields[19].toLongLong(&ok) : 0;
    timespec boot{};
    if (!ok || clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return std::nullopt;
    const qint64 nowMs = qint64(boot.tv_sec) * 1000 + boot.tv_nsec / 1'000'000;
    const qint64 startMs = startTicks * 1000 / sysconf(_SC_CLK_TCK);
    return std::chrono::milliseconds(std::max<qint64>(nowMs - startMs, 0));
#elif defined(Q_OS_MACOS)
    proc_bsdinfo info{};
    if (proc_pidinfo(static_cast<int>(pid), PROC_PIDTBSDINFO, 0, &info, sizeof info) !=
        static_cast<int>(sizeof info))
        return std::nullopt;
    timeval now{};
    gettimeofday(&now, nullptr);
    const qint64 ageMs = (qint64(now.tv_sec) - qint64(info.pbi_start_tvsec)) * 1000 +
                         (qint64(now.tv_usec) - qint64(info.pbi_start_tvusec)) / 1000;
    return std::chrono::milliseconds(std::max<qint64>(ageMs, 0));
#else
    Q_UNUSED(pid);
    return std::nullopt;
#endif
}

QStringList ProcessScanner::readNames(qint64 pid) const {
    QStringList names;
#if defined(Q_OS_LINUX)
    const QByteArray dir = QFile::encodeName(m_procRoot) + '/' + QByteArray::number(pid) + '/';
    const QByteArray comm = readSmallFile(dir + "comm", 64).trimmed();
    if (!comm.isEmpty())
        names.append(QString::fromUtf8(comm));
    char target[4096];
    const ssize_t n = ::readlink(QByteArray(dir + "exe").constData(), target, sizeof target);
    if (n > 0) { // only for our own user's processes; others' need privileges
        QString exe = QFile::decodeName(QByteArray(target, static_cast<qsizetype>(n)));
        if (exe.endsWith(QLatin1String(" (deleted)"))) // the game was updated while running
            exe.chop(10);
        names.append(fileName(exe));
    }
    const QByteArray cmdline = readSmallFile(dir + "cmdline", 4096);
    const QByteArray argv0 = cmdline.left(cmdline.indexOf('\0'));
    if (!argv0.isEmpty())
        names.append(fileName(QString::fromUtf8(argv0)));
#elif defined(Q_OS_MACOS)
    char name[2 * MAXCOMLEN + 1] = {};
    if (proc_name(static_cast<int>(pid), name, sizeof name) > 0)
        names.append(QString::fromUtf8(name));
    char path[PROC_PIDPATHINFO_MAXSIZE] = {};
    if (proc_pidpath(static_cast<int>(pid), path, sizeof path) > 0)
        names.append(fileName(QString::fromUtf8(path)));
#else
    Q_UNUSED(pid);
#endif
    names.removeAll(QString());
    names.removeDuplicates();
    return names;
}

} // namespace tessera::manager
