// SPDX-License-Identifier: Apache-2.0
// EngineThread: the engine worker's thread, started and ended with its owner.
#include "node/engine/EngineThread.h"

#include "node/engine/EngineWorker.h"

namespace tessera::node {

EngineThread::EngineThread()
    : m_worker(new EngineWorker(&m_replies)) {
    m_thread.setObjectName(QStringLiteral("tessera-engine"));
    m_worker->moveToThread(&m_thread);
    // QThread deletes deferred objects as it finishes, on itself.
    QObject::connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.start();
}

EngineThread::~EngineThread() {
    m_worker->stop(); // the flag holds back any further task even if doStop never runs
    m_thread.quit();
    m_thread.wait();
}

} // namespace tessera::node
