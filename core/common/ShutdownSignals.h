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
