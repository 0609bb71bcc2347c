// SPDX-License-Identifier: Apache-2.0
// AuditWorker: the kept tasks recomputed on the node's weights, off the coordinator's thread.
#include "coordinator/trust/AuditWorker.h"

#include "coordinator/trust/Recompute.h"
#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"
#include "engine/StageEngine.h"

#include <cmath>
#include <optional>

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
    gpu::StageEngine* e = engine(stage);
    if (e == nullptr)
        return nullptr; // not audited here: nothing judged
    // The weights the node showed, when it answered (unanswered: judged on the replicas' alone).
    std::optional<std::vector<float>> shown;
    if (!job.weights.isNull()) {
        Result<std::vector<float>> values = protocol::partitionValues(job.weights.frame);
        if (!values) {
            out.passed = false;
            out.reason = QStringLiteral("the weights it was asked for did not come as asked");
            return nullptr;
        }
        shown = std::move(*values);
        if (!shownWeightsHold(*e, stage, *shown, job.reference.get(), out))
            return nullptr;
    } else if (!job.reference) {
        return nullptr;
    }
    // Where the replicas' weights are known, the answers are judged on them.
    const std::vector<float>& load =
        job.reference && (!shown || job.reference->size() == shown->size()) ? *job.reference : *shown;
    if (Status set = e->setPartition(-1, m_settings.partitions, load); !set) {
        qWarning("trust: loading the weights of node %s's audit failed: %s", qPrintable(shortId(job.node)),
                 set.message().c_str());
        return nullptr;
    }
    return e;
}

bool AuditWorker::shownWeightsHold(gpu::StageEngine& e, int stage, const std::vector<float>& weights,
                                   const std::vector<float>* reference, AuditOutcome& out) const {
    Result<std::int64_t> size = e.partitionSize(-1, m_settings.partitions);
    if (!size || qint64(weights.size()) != *size) {
        out.passed = false;
        out.reason = QStringLiteral("its weights have %1 values; stage %2 has %3")
                         .arg(weights.size())
                         .arg(stage)
                         .arg(size ? *size : -1);
        return false;
    }
    if (!stats::allFinite(weights)) {
        out.passed = false;
        out.reason = QStringLiteral("its weights are not all finite");
        return false;
    }
    // Where the replicas' weights are known, the node's must be theirs.
    if (reference && reference->size() == weights.size()) {
        const double error = stats::relativeError(weights, *reference);
        if (!(error <= m_settings.referenceTolerance)) {
            out.passed = false;
            out.reason = QStringLiteral("its weights differ from those its stage's replicas hold by %1 (tolerance %2)")
                             .arg(error, 0, 'g', 3)
                             .arg(m_settings.referenceTolerance);
            return false;
        }
    }
    return true;
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
    // Token by token (as a re-execution compares): one relative error over the frame let a node edit two
    // tokens' rows by 20% and pass for 2,000 microbatches (test_dishonest_nodes "two tokens edited").
    const double error = stats::worstRowError(mine->values, theirs->values, std::size_t(mine->width));
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
    std::unique_ptr<gpu::StageEngine> made = cpuStageEngine(m_config, stage);
    return made ? (m_engines[stage] = std::move(made)).get() : nullptr;
}

} // namespace tessera::coordinator
