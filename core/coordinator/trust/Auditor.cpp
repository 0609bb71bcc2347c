// SPDX-License-Identifier: Apache-2.0
// Auditor: evidence kept, weights asked for at the step's end, the kept tasks recomputed on them.
#include "coordinator/trust/Auditor.h"

#include "coordinator/trust/AuditWorker.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tessera::coordinator {

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

} // namespace

Auditor::Auditor(const gpu::ModelConfig& config, AuditSettings settings, SendText sendText, Clock clock,
                 QObject* parent)
    : QObject(parent)
    , m_config(config)
    , m_settings(settings)
    , m_sendText(std::move(sendText))
    , m_clock(std::move(clock)) {
    qRegisterMetaType<AuditOutcome>();
    m_worker = std::make_unique<AuditWorker>(config, settings);
    m_available = m_worker->available();  // read before it moves to its thread
    m_jobs = new Mailbox(m_worker.get()); // moves with the worker
    m_worker->moveToThread(&m_thread);
    m_thread.setObjectName(QStringLiteral("audits"));
    m_thread.start();
}

Auditor::~Auditor() {
    m_thread.quit(); // after the job it is judging, if any
    m_thread.wait();
}

void Auditor::keep(const QString& node, Evidence evidence, bool suspicious) {
    if (!m_available)
        return;
    NodeAudit& audit = m_nodes[node];
    if (audit.round != 0)
        return; // a snapshot is on its way: this task ran on later weights than it shows
    if (!suspicious && !audit.urgent && audit.stepsSinceSnapshot + 1 < m_settings.stepsBetweenSnapshots)
        return; // no snapshot at this step's end: the evidence would be dropped unjudged
    if (!audit.evidence.empty() && audit.evidence.front().version != evidence.version) {
        audit.evidence.clear(); // older weights, never asked for: unjudged
        audit.urgent = false;
    }
    if (suspicious) {
        audit.urgent = true;
        if (int(audit.evidence.size()) >= m_settings.maxEvidencePerNode)
            audit.evidence.erase(audit.evidence.begin()); // a sampled one makes room
    }
    if (int(audit.evidence.size()) < m_settings.maxEvidencePerNode)
        audit.evidence.push_back(std::move(evidence));
}

void Auditor::requestSnapshots(const VersionOf& versionOf) {
    const qint64 t = m_clock();
    std::map<int, std::shared_ptr<const std::vector<float>>> references; // read once per stage
    for (auto it = m_nodes.begin(); it != m_nodes.end(); ++it) {
        NodeAudit& audit = it.value();
        ++audit.stepsSinceSnapshot;
        if (audit.round != 0 || audit.evidence.empty())
            continue;
        const bool urgent = std::exchange(audit.urgent, false);
        if (audit.stepsSinceSnapshot < m_settings.stepsBetweenSnapshots && !urgent) {
            audit.evidence.clear();
            continue;
        }
        const qint64 version = versionOf(it.key());
        if (audit.evidence.front().version != version) {
            audit.evidence.clear();
            continue;
        }
        const qint64 round = m_nextRound++;
        if (!m_sendText(it.key(),
                        protocol::SyncRequest{round, m_settings.partitions, m_settings.chunkValues})) {
            audit.evidence.clear();
            continue;
        }
        if (m_reference) {
            const int stage = audit.evidence.front().stage;
            if (!references.contains(stage))
                references[stage] = m_reference(stage);
            audit.reference = references[stage];
        }
        audit.round = round;
        audit.stepsSinceSnapshot = 0;
        audit.version = version;
        audit.deadlineMs = t + deadlineMs(audit.evidence.front().stage);
        audit.requestedAtMs = t;
    }
}

bool Auditor::onShare(const QString& node, const protocol::AverageShare& share,
                      const protocol::TaskMessage& message) {
    const auto it = m_nodes.find(node);
    if (it == m_nodes.end() || it->round == 0 || it->round != share.round)
        return false;
    NodeAudit& audit = it.value();
    AuditJob job{node, audit.version, audit.requestedAtMs, std::move(audit.evidence),
                 message.hold(protocol::TaskFrameType::Partition), std::move(audit.reference)};
    audit.evidence.clear();
    audit.round = 0;
    if (share.partition != -1 || job.weights.isNull()) {
        finish(AuditOutcome{node, job.evidence.front().stage, false, 0, 0,
                            QStringLiteral("the weights it was asked for did not come as asked"),
                            job.requestedAtMs});
        return true;
    }
    ++m_inFlight;
    // Judged on the audit thread; the outcome comes back to this one (the Mailboxes make both
    // hand-offs visible to ThreadSanitizer).
    m_jobs->post([this, job = std::move(job)] {
        m_replies.post([this, outcome = m_worker->judge(job)] {
            --m_inFlight;
            finish(outcome);
        });
    });
    return true;
}

void Auditor::finish(const AuditOutcome& outcome) {
    m_tasks += outcome.tasks;
    if (outcome.tasks == 0 && outcome.passed)
        return; // nothing could be judged here
    ++m_audits;
    if (!outcome.passed)
        ++m_failed;
    if (outcome.unanswered)
        ++m_unanswered;
    else
        m_worstPassed = std::max(m_worstPassed, outcome.worstError);
    Q_EMIT audited(outcome);
}

void Auditor::nodeGone(const QString& node) {
    m_nodes.remove(node);
}

void Auditor::nodeLeft(const QString& node) {
    const auto it = m_nodes.find(node);
    if (it == m_nodes.end())
        return;
    if (it->round != 0)
        unanswered(node, it.value(), true);
    m_nodes.erase(it);
}

void Auditor::tick() {
    const qint64 t = m_clock();
    for (auto it = m_nodes.begin(); it != m_nodes.end(); ++it)
        if (it->round != 0 && t >= it->deadlineMs)
            unanswered(it.key(), it.value(), false);
}

qint64 Auditor::deadlineMs(int stage) const {
    const double bytes = 4.0 * double(m_config.stageParameterCount(stage));
    return m_settings.snapshotDeadlineMs +
           qint64(1000.0 * bytes / std::max(1.0, m_settings.slowestUplinkBytesPerSecond));
}

void Auditor::unanswered(const QString& node, NodeAudit& audit, bool left) {
    const double seconds = double(m_clock() - audit.requestedAtMs) / 1000.0;
    const int stage = audit.evidence.empty() ? 0 : audit.evidence.front().stage;
    AuditOutcome silent{
        node,
        stage,
        false,
        0,
        0,
        left ? QStringLiteral("it left or paused %1 s after its weights were asked for, "
                              "before sending them")
                   .arg(seconds, 0, 'f', 0)
             : QStringLiteral("it did not send the weights of its audit within %1 s").arg(seconds, 0, 'f', 0),
        audit.requestedAtMs};
    silent.unanswered = true;
    silent.left = left;
    qWarning("trust: node %s: %s", qPrintable(shortId(node)), qPrintable(silent.reason));
    AuditJob job{
        node, audit.version, audit.requestedAtMs, std::move(audit.evidence), {}, std::move(audit.reference)};
    audit.evidence.clear();
    audit.reference.reset();
    audit.round = 0;
    if (!job.reference || job.evidence.empty())
        return finish(silent);
    // Its answers are still judged, on the weights its replicas hold: a lie there is what it fails. A
    // node that left (a game started, the process was killed) and whose answers hold dodged nothing:
    // it passes on them; one that stays and keeps silent past the deadline fails all the same.
    ++m_inFlight;
    m_jobs->post([this, job = std::move(job), silent] {
        m_replies.post([this, outcome = m_worker->judge(job), silent] {
            --m_inFlight;
            finish(outcome.passed && !silent.left ? silent : outcome);
        });
    });
}

} // namespace tessera::coordinator
