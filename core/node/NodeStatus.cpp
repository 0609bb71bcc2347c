// SPDX-License-Identifier: Apache-2.0
// Node::status(): what the node tells its control socket (the desktop app, `tessera-node status`).
#include "node/Node.h"

#include "common/MonotonicClock.h"
#include "common/Version.h"
#include "node/BenchmarkRun.h"
#include "node/engine/EngineHost.h"
#include "node/ledger/LocalLedger.h"
#include "node/session/Admission.h"
#include "node/session/CreditsPoller.h"
#include "node/session/NodeSession.h"
#include "node/session/TaskRunner.h"
#include "node/shard/ShardInstall.h"

namespace tessera::node {

QJsonObject Node::status() const {
    const EngineStats stats = m_engine ? m_engine->stats() : EngineStats{};
    const QJsonObject download =
        m_install ? m_install->status()
                  : QJsonObject{{QStringLiteral("bytes"), qint64(0)}, {QStringLiteral("total"), qint64(0)}};
    QJsonObject s{{QStringLiteral("state"), nodeStateName(m_state)},
                  {QStringLiteral("detail"), m_stateDetail},
                  {QStringLiteral("node_id"), m_identity ? m_identity->nodeId() : QString()},
                  {QStringLiteral("coordinator"), m_options.coordinator.toString()},
                  {QStringLiteral("device"), m_options.device},
                  {QStringLiteral("stage"), m_admission ? m_admission->stage() : -1},
                  {QStringLiteral("download"), download},
                  {QStringLiteral("compute_share"), stats.computeShareWindow},
                  {QStringLiteral("compute_share_total"), stats.computeShareTotal},
                  {QStringLiteral("compute_limit"), m_limit},
                  {QStringLiteral("paused"), m_pauseRequested},
                  {QStringLiteral("tasks_done"), stats.tasksDone},
                  {QStringLiteral("version"), tesseraVersion()}};
    if (m_retryAtMs > MonotonicClock::nowMs())
        s.insert(QStringLiteral("retry_in_s"), double(m_retryAtMs - MonotonicClock::nowMs()) / 1000);
    if (!m_lastError.isEmpty())
        s.insert(QStringLiteral("last_error"), m_lastError);
    if (m_runner)
        s.insert(QStringLiteral("training"), m_runner->status());
    if (m_session)
        s.insert(QStringLiteral("session"), m_session->status());
    if (m_admission && m_admission->stageCount() > 0)
        s.insert(QStringLiteral("stages"), m_admission->stageCount());
    // The benchmark for the desktop app's first run: its progress, then its result.
    if (m_benchmark)
        s.insert(QStringLiteral("benchmark"), m_benchmark->status());
    LocalLedger::addTotalsTo(m_ledger.get(), s); // credits_total, ledger_receipts
    m_credits->addEscrowTo(s);                   // credits_pending, credits_forfeited, last_forfeit_reason
    return s;
}

} // namespace tessera::node
