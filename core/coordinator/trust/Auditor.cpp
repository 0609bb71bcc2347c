// Auditor: evidence kept, weights asked for at the step's end, the kept tasks recomputed on them.
#include "coordinator/trust/Auditor.h"

#include "coordinator/trust/Recompute.h"
#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"
#include "engine/StageEngine.h"

#include <cmath>
#include <utility>

namespace tessera::coordinator {

namespace {

std::span<const std::uint8_t> bytesOf(const protocol::HeldFrame& f) {
    return {reinterpret_cast<const std::uint8_t*>(f.frame.payload.data()),
            std::size_t(f.frame.payload.size())};
}

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
    if (Result<std::unique_ptr<gpu::FrameDecoder>> decoder = gpu::FrameDecoder::create(config); decoder)
        m_decoder = std::move(*decoder);
    else
        qWarning("trust: no audits (the run's codec: %s)", decoder.message().c_str());
}

Auditor::~Auditor() = default;

void Auditor::keep(const QString& node, Evidence evidence, bool suspicious) {
    if (!m_decoder)
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
        if (!m_sendText(it.key(), protocol::SyncRequest{round, m_settings.partitions})) {
            audit.evidence.clear();
            continue;
        }
        audit.round = round;
        audit.stepsSinceSnapshot = 0;
        audit.version = version;
        audit.deadlineMs = t + m_settings.snapshotDeadlineMs;
        audit.requestedAtMs = t;
    }
}

bool Auditor::onShare(const QString& node, const protocol::AverageShare& share,
                      const protocol::TaskMessage& message) {
    const auto it = m_nodes.find(node);
    if (it == m_nodes.end() || it->round == 0 || it->round != share.round)
        return false;
    NodeAudit& audit = it.value();
    const protocol::TaskFrame* frame = message.frame(protocol::TaskFrameType::Partition);
    Result<std::vector<float>> weights = frame == nullptr
                                             ? Result<std::vector<float>>(makeError("no partition frame"))
                                             : protocol::partitionValues(*frame);
    AuditOutcome outcome;
    if (share.partition != -1 || !weights) {
        outcome = AuditOutcome{node,  audit.evidence.front().stage,
                               false, 0,
                               0,     QStringLiteral("the weights it was asked for did not come as asked")};
    } else {
        outcome = judge(node, audit, *weights);
    }
    outcome.requestedAtMs = audit.requestedAtMs;
    audit.evidence.clear();
    audit.round = 0;
    if (outcome.tasks > 0 || !outcome.passed) {
        ++m_audits;
        if (!outcome.passed)
            ++m_failed;
        else
            m_worstPassed = std::max(m_worstPassed, outcome.worstError);
        Q_EMIT audited(outcome);
    }
    return true;
}

AuditOutcome Auditor::judge(const QString& node, NodeAudit& audit, const std::vector<float>& weights) {
    const int stage = audit.evidence.front().stage;
    AuditOutcome out{node, stage, true, 0, 0, {}};
    gpu::StageEngine* e = engine(stage);
    if (e == nullptr)
        return out; // not audited here: nothing judged
    Result<std::int64_t> size = e->partitionSize(-1, m_settings.partitions);
    if (!size || qint64(weights.size()) != *size) {
        out.passed = false;
        out.reason = QStringLiteral("its weights have %1 values; stage %2 has %3")
                         .arg(weights.size())
                         .arg(stage)
                         .arg(size ? *size : -1);
        return out;
    }
    if (!stats::allFinite(weights)) {
        out.passed = false;
        out.reason = QStringLiteral("its weights are not all finite");
        return out;
    }
    if (Status set = e->setPartition(-1, m_settings.partitions, weights); !set) {
        qWarning("trust: loading node %s's weights failed: %s", qPrintable(shortId(node)),
                 set.message().c_str());
        return out;
    }
    for (const Evidence& ev : audit.evidence) {
        if (ev.version != audit.version)
            continue;
        const bool forward = ev.kind == protocol::TaskKind::Forward;
        Result<Recomputed> ref =
            recompute(*e, !forward, bytesOf(ev.input), bytesOf(ev.targets), bytesOf(ev.gradientIn));
        if (!ref) {
            qWarning("trust: recomputing microbatch %lld of stage %d failed (not held against the node): %s",
                     qlonglong(ev.microbatch), stage, ref.message().c_str());
            continue;
        }
        ++out.tasks;
        ++m_tasks;
        if (ev.loss && std::isfinite(ref->loss) &&
            std::abs(*ev.loss - ref->loss) > m_settings.lossTolerance) {
            out.passed = false;
            out.reason = QStringLiteral("microbatch %1: it reported loss %2, its weights give %3")
                             .arg(ev.microbatch)
                             .arg(*ev.loss, 0, 'f', 4)
                             .arg(ref->loss, 0, 'f', 4);
            return out;
        }
        if (ev.output.isNull() || ref->frame.empty())
            continue;
        Result<gpu::DecodedFrame> mine =
            forward ? m_decoder->activation(bytesOf(ev.output)) : m_decoder->gradient(bytesOf(ev.output));
        Result<gpu::DecodedFrame> theirs =
            forward ? m_decoder->activation(ref->frame) : m_decoder->gradient(ref->frame);
        if (!mine || !theirs || mine->values.size() != theirs->values.size())
            continue; // the result check decoded it when it came; a failure here is ours
        const double error = stats::relativeError(mine->values, theirs->values);
        out.worstError = std::max(out.worstError, error);
        if (!(error <= m_settings.tolerance)) {
            out.passed = false;
            out.reason = QStringLiteral("microbatch %1: its %2 differs from what its own weights give by %3 "
                                        "(tolerance %4)")
                             .arg(ev.microbatch)
                             .arg(forward ? u"activation" : u"gradient")
                             .arg(error, 0, 'f', 3)
                             .arg(m_settings.tolerance, 0, 'f', 3);
            return out;
        }
    }
    return out;
}

gpu::StageEngine* Auditor::engine(int stage) {
    if (const auto it = m_engines.find(stage); it != m_engines.end())
        return it->second.get();
    gpu::StageEngineOptions options;
    options.config = m_config;
    options.stage = stage;
    options.device = "cpu";
    options.keepActivations = false;
    Result<std::unique_ptr<gpu::StageEngine>> made = gpu::StageEngine::create(options);
    if (!made) {
        qWarning("trust: no engine for stage %d: %s", stage, made.message().c_str());
        return nullptr;
    }
    return (m_engines[stage] = std::move(*made)).get();
}

void Auditor::nodeGone(const QString& node) {
    m_nodes.remove(node);
}

void Auditor::tick() {
    const qint64 t = m_clock();
    for (auto it = m_nodes.begin(); it != m_nodes.end(); ++it)
        if (it->round != 0 && t >= it->deadlineMs) {
            qWarning("trust: node %s did not send the weights of its audit in time: unjudged",
                     qPrintable(shortId(it.key())));
            it->round = 0;
            it->evidence.clear();
        }
}

} // namespace tessera::coordinator
