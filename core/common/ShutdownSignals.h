// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShutdownSignals: SIGTERM and SIGINT delivered as a Qt signal on the event loop (self-pipe).

#include "base/Result.h"

#include <QObject>

#include <memory>

class QSocketNotifier;

namespace tessera {

class ShutdownSignals final : public QObject {
    Q_OBJECT

public:
    // Installs the handlers; at most one instance at a time (the handler has one pipe to write).
    // Destroying it restores the default dispositions.
    static Result<std::unique_ptr<ShutdownSignals>> install();
    ~ShutdownSignals() override;

    // While set, a signal ends the process at once (exit status 128 + the signal) with `note` on
    // stderr instead of waiting for the event loop: for a start that runs for minutes without one
    // (creating a large run) and leaves nothing a next start would trust when cut short.
    static void setExitAtOnce(bool on, const char* note = nullptr);

Q_SIGNALS:
    void received(int signalNumber);

private:
    ShutdownSignals(int readFd, int writeFd);
    void drain();

    int m_readFd;
    int m_writeFd;
    std::unique_ptr<QSocketNotifier> m_notifier;
};

} // namespace tessera
