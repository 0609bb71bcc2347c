// SPDX-License-Identifier: Apache-2.0
// AuditWorker: the kept tasks recomputed on the node's weights, off the coordinator's thread.
#include "coordinator/trust/AuditWorker.h"

#include "coordinator/trust/Recompute.h"
#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"
#include "engine/StageEngine.h"

#include <cmath>

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

AuditWorker::AuditWorker(const gpu::ModelConfig& config, AuditSettings settings)
    : m_config(config)
    , m_settings(settings) {
    if (Result<std::unique_ptr<gpu::FrameDecoder>> decoder = gpu::FrameDecoder::create(config); decoder)
        m_decoder = std::move(*decoder);
    else
        qWarning("trust: no audits (the run's codec: %s)", decoder.message().c_str());
}

AuditWorker::~AuditWorker() = default;

AuditOutcome AuditWorker::judge(const AuditJob& job) {
    const QString& node = job.node;
    const int stage = job.evidence.empty() ? 0 : job.evidence.front().stage;
    AuditOutcome out{node, stage, true, 0, 0, {}};
    out.requestedAtMs = job.requestedAtMs;
    if (job.evidence.empty() || !m_decoder)
        return out;
    gpu::StageEngine* e = loadWeights(job, stage, out);
    if (e == nullptr)
        return out;
    for (const Evidence& ev : job.evidence) {
        if (ev.version != job.version)
            continue;
        if (!judgeTask(*e, ev, stage, out))
            return out;
    }
    return out;
}

gpu::StageEngine* AuditWorker::loadWeights(const AuditJob& job, int stage, AuditOutcome& out) {
    if (job.weights.isNull()) { // unanswered: its answers are judged on the weights its replicas hold
        gpu::StageEngine* e = job.reference ? engine(stage) : nullptr;
        if (e == nullptr)
            return nullptr;
        if (Status set = e->setPartition(-1, m_settings.partitions, *job.reference); !set) {
            qWarning("trust: loading stage %d's reference weights failed: %s", stage, set.message().c_str());
            return nullptr;
        }
        return e;
    }
    Result<std::vector<float>> values = protocol::partitionValues(job.weights.frame);
    if (!values) {
        out.passed = false;
        out.reason = QStringLiteral("the weights it was asked for did not come as asked");
        return nullptr;
    }
    const std::vector<float>& weights = *values;
    gpu::StageEngine* e = engine(stage);
    if (e == nullptr)
        return nullptr; // not audited here: nothing judged
    Result<std::int64_t> size = e->partitionSize(-1, m_settings.partitions);
    if (!size || qint64(weights.size()) != *size) {
        out.passed = false;
        out.reason = QStringLiteral("its weights have %1 values; stage %2 has %3")
                         .arg(weights.size())
                         .arg(stage)
                         .arg(size ? *size : -1);
        return nullptr;
    }
    if (!stats::allFinite(weights)) {
        out.passed = false;
        out.reason = QStringLiteral("its weights are not all finite");
        return nullptr;
    }
    // Where the replicas' weights are known, the node's must be theirs, and its answers are judged on them.
    const bool referenced = job.reference && job.reference->size() == weights.size();
    if (referenced) {
        const double error = stats::relativeError(weights, *job.reference);
        if (!(error <= m_settings.referenceTolerance)) {
            out.passed = false;
            out.reason = QStringLiteral("its weights differ from those its stage's replicas hold by %1 (tolerance %2)")
                             .arg(error, 0, 'g', 3)
                             .arg(m_settings.referenceTolerance);
            return nullptr;
        }
    }
    if (Status set = e->setPartition(-1, m_settings.partitions, referenced ? *job.reference : weights); !set) {
        qWarning("trust: loading node %s's weights failed: %s", qPrintable(shortId(job.node)),
                 set.message().c_str());
        return nullptr;
    }
    return e;
}

bool AuditWorker::judgeTask(gpu::StageEngine& e, const Evidence& ev, int stage, AuditOutcome& out) {
    const bool forward = ev.kind == protocol::TaskKind::Forward;
    Result<Recomputed> ref =
        recompute(e, !forward, bytesOf(ev.input), bytesOf(ev.targets), bytesOf(ev.gradientIn));
    if (!ref) {
        qWarning("trust: recomputing microbatch %lld of stage %d failed (not held against the node): %s",
                 qlonglong(ev.microbatch), stage, ref.message().c_str());
        return true;
    }
    // A task counts as judged only where what it returned was compared with the recomputation
    // (a stage that returns no tensor, like the first one's backward, returns nothing to lie in:
    // its gradients show only in its averaging share). The kind it was is then covered.
    bool& judged = forward ? out.judgedForward : out.judgedBackward;
    if (ref->frame.empty()) {
        ++out.tasks;
        judged = true;
    }
    if (ev.loss && std::isfinite(ref->loss) && std::abs(*ev.loss - ref->loss) > m_settings.lossTolerance) {
        out.passed = false;
        out.reason = QStringLiteral("microbatch %1: it reported loss %2, its weights give %3")
                         .arg(ev.microbatch)
                         .arg(*ev.loss, 0, 'f', 4)
                         .arg(ref->loss, 0, 'f', 4);
        return false;
    }
    if (ev.output.isNull() || ref->frame.empty())
        return true;
    Result<gpu::DecodedFrame> mine =
        forward ? m_decoder->activation(bytesOf(ev.output)) : m_decoder->gradient(bytesOf(ev.output));
    Result<gpu::DecodedFrame> theirs =
        forward ? m_decoder->activation(ref->frame) : m_decoder->gradient(ref->frame);
    if (!mine || !theirs || mine->values.size() != theirs->values.size())
        return true; // the result check decoded it when it came; a failure here is ours
    const double error = stats::relativeError(mine->values, theirs->values);
    ++out.tasks;
    judged = true;
    out.worstError = std::max(out.worstError, error);
    if (!(error <= m_settings.tolerance)) {
        out.passed = false;
        out.reason = QStringLiteral("microbatch %1: its %2 differs from what its own weights give by %3 "
                                    "(tolerance %4)")
                         .arg(ev.microbatch)
                         .arg(forward ? u"activation" : u"gradient")
                         .arg(error, 0, 'f', 3)
                         .arg(m_settings.tolerance, 0, 'f', 3);
        return false;
    }
    return true;
}

gpu::StageEngine* AuditWorker::engine(int stage) {
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

} // namespace tessera::coordinator
