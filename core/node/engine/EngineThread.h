// SPDX-License-Identifier: Apache-2.0
#pragma once
// EngineThread: owns the QThread an EngineWorker lives on and ends both in order, and the mailbox
// the worker's signals are emitted from (on the thread that made the EngineThread).

#include "common/Mailbox.h"

#include <QThread>

namespace tessera::node {

class EngineWorker;

class EngineThread final {
public:
    // Starts the thread with a fresh worker on it.
    EngineThread();
    // Stops the worker (a running microbatch finishes first), ends the thread, and has the worker
    // deleted on it, so the stage's memory is freed by the thread that used it.
    ~EngineThread();
    EngineThread(const EngineThread&) = delete;
    EngineThread& operator=(const EngineThread&) = delete;

    EngineWorker* worker() const { return m_worker; }

private:
    // Destroyed after the thread has ended: an answer still waiting names a worker that is gone.
    Mailbox m_replies;
    QThread m_thread;
    EngineWorker* m_worker;
};

} // namespace tessera::node
