// SPDX-License-Identifier: Apache-2.0
#include "common/ThreadPriority.h"

#include <QtGlobal>

#ifdef Q_OS_LINUX
#include <cerrno>
#include <cstring>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tessera {

namespace {

constexpr int kBackgroundNice = 10;

} // namespace

void makeThisThreadBackground() {
#ifdef Q_OS_LINUX
    // On Linux a nice value belongs to a thread (PRIO_PROCESS with a thread id).
    const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
    if (::setpriority(PRIO_PROCESS, tid, kBackgroundNice) != 0)
        qWarning("cannot lower this thread's priority: %s", std::strerror(errno));
#endif
}

} // namespace tessera
