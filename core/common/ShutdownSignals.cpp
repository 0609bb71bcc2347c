// SPDX-License-Identifier: Apache-2.0
#include "common/ShutdownSignals.h"

#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tessera {

namespace {

// Written by the handler, so it must be a plain global: nothing else is async-signal-safe.
volatile sig_atomic_t g_writeFd = -1;
volatile sig_atomic_t g_exitAtOnce = 0;
const char* volatile g_exitNote = nullptr;

constexpr int kSignals[] = {SIGTERM, SIGINT};

void onSignal(int signalNumber) {
    if (g_exitAtOnce) {
        // Only async-signal-safe calls here: write(2) and _exit(2).
        if (const char* note = g_exitNote)
            (void)::write(STDERR_FILENO, note, std::strlen(note));
        ::_exit(128 + signalNumber);
    }
    const int savedErrno = errno;
    const unsigned char byte = static_cast<unsigned char>(signalNumber);
    // Non-blocking: a full pipe already holds a pending shutdown, so a lost byte loses nothing.
    (void)::write(g_writeFd, &byte, 1);
    errno = savedErrno;
}

Status setHandler(int signalNumber, void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (::sigaction(signalNumber, &action, nullptr) != 0)
        return makeError(std::string("cannot install a handler for signal ") + std::to_string(signalNumber) +
                         ": " + std::strerror(errno));
    return {};
}

} // namespace

Result<std::unique_ptr<ShutdownSignals>> ShutdownSignals::install() {
    if (g_writeFd != -1)
        return makeError("shutdown signal handlers are already installed");
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        return makeError(std::string("cannot create the shutdown signal socket pair: ") +
                         std::strerror(errno));
    for (int fd : fds)
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    std::unique_ptr<ShutdownSignals> s(new ShutdownSignals(fds[0], fds[1]));
    g_writeFd = fds[1];
    for (int signalNumber : kSignals)
        if (Status st = setHandler(signalNumber, onSignal); !st)
            return st.error();
    return s;
}

void ShutdownSignals::setExitAtOnce(bool on, const char* note) {
    g_exitNote = note;
    g_exitAtOnce = on ? 1 : 0;
}

ShutdownSignals::ShutdownSignals(int readFd, int writeFd)
    : m_readFd(readFd)
    , m_writeFd(writeFd)
    , m_notifier(std::make_unique<QSocketNotifier>(readFd, QSocketNotifier::Read)) {
    connect(m_notifier.get(), &QSocketNotifier::activated, this, &ShutdownSignals::drain);
}

ShutdownSignals::~ShutdownSignals() {
    for (int signalNumber : kSignals)
        (void)setHandler(signalNumber, SIG_DFL);
    g_writeFd = -1;
    m_notifier.reset();
    ::close(m_readFd);
    ::close(m_writeFd);
}

void ShutdownSignals::drain() {
    unsigned char bytes[16];
    const ssize_t n = ::read(m_readFd, bytes, sizeof bytes);
    for (ssize_t i = 0; i < n; ++i)
        Q_EMIT received(int(bytes[i]));
}

} // namespace tessera
