// SPDX-License-Identifier: Apache-2.0
// ResultCheck: hard checks on every returned tensor, audits on a sampled share.
#include "coordinator/trust/ResultCheck.h"

#include "base/TokenFrame.h"
#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"

#include <QHashFunctions>
#include <QRandomGenerator>

#include <algorithm>

namespace tessera::coordinator {

namespace {

QString fromStd(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

ResultCheck::ResultCheck(const gpu::ModelConfig& config, ResultCheckSettings settings,
                         std::unique_ptr<gpu::FrameDecoder> decoder)
    : m_config(config)
    , m_settings(settings)
    , m_decoder(std::move(decoder))
    , m_random([] { return QRandomGenerator::global()->generateDouble(); })
    , m_monitor(config.stages, settings.monitorSettings) {}

ResultCheck::~ResultCheck() = default;

Result<std::unique_ptr<ResultCheck>> ResultCheck::create(const gpu::ModelConfig& config,
                                                         ResultCheckSettings settings) {
    Result<std::unique_ptr<gpu::FrameDecoder>> decoder = gpu::FrameDecoder::create(config);
    if (!decoder)
        return makeError("the result checks: " + decoder.message());
    return std::unique_ptr<ResultCheck>(new ResultCheck(config, settings, std::move(*decoder)));
}

CheckVerdict ResultCheck::check(const TaskEvidence& task) {
    ++m_checked;
    Decoded decoded;
    CheckVerdict verdict;
    verdict.refused = hardChecks(task, &decoded);
    verdict.inputMayCause = verdict.refused && decoded.bound;
    if (verdict.refused)
        ++m_refused;
    else if (m_settings.monitorSettings.k > 0 && (verdict.suspicious = monitorChecks(task, &decoded)))
        ++m_suspicious;
    return verdict;
}

std::optional<bool> ResultCheck::unusualOutput(int stage, bool activation,
                                               std::span<const std::uint8_t> frame) const {
    if (!m_settings.enabled || frame.empty())
        return std::nullopt;
    Result<gpu::DecodedFrame> decoded =
        activation ? m_decoder->activationForChecks(frame) : m_decoder->gradientForChecks(frame);
    if (!decoded)
        return std::nullopt;
    const stats::RowRms rms =
        stats::rowRms(decoded->values, std::size_t(decoded->width), std::size_t(decoded->dimension));
    return m_monitor.outlier(
        stage, {activation ? StageMonitor::Metric::Rms : StageMonitor::Metric::GradientRms, rms.mean});
}

bool ResultCheck::sampled(const QString& node) {
    const double rate = m_auditsPassed.value(node, 0) < m_settings.probationAudits ? m_settings.probationRate
                                                                                   : m_settings.trustedRate;
    return m_random() < rate;
}

std::optional<QString> ResultCheck::hardChecks(const TaskEvidence& task, Decoded* out) {
    using protocol::TaskKind;
    const bool last = task.stage == task.stages - 1;
    if (last && task.kind == TaskKind::ForwardBackward) {
        if (!task.loss || !std::isfinite(*task.loss) || *task.loss < 0 || *task.loss > m_settings.maxLoss) {
            out->bound = task.loss && std::isfinite(*task.loss) && *task.loss > m_settings.maxLoss;
            return QStringLiteral("the last stage's loss is missing, not finite or outside 0..%1")
                .arg(m_settings.maxLoss);
        }
    }
    if (task.output.empty())
        return std::nullopt; // a stage 0 backward (or a one-stage run) returns no tensor
    const bool activation = task.kind == TaskKind::Forward;
    Result<gpu::DecodedFrame> frame =
        activation ? m_decoder->activationForChecks(task.output) : m_decoder->gradientForChecks(task.output);
    if (!frame)
        return QStringLiteral("the %1 frame does not decode: %2")
            .arg(activation ? u"activation" : u"gradient", fromStd(frame.message()));
    gpu::DecodedFrame& decoded = *frame;
    if (decoded.batch != task.batch || decoded.seq != task.seq)
        return QStringLiteral("the frame is %1×%2, the microbatch %3×%4")
            .arg(decoded.batch)
            .arg(decoded.seq)
            .arg(task.batch)
            .arg(task.seq);
    if (activation) {
        Result<gpu::TokenBatch> ids = gpu::decodeTokens(task.tokens, m_config.vocabSize, m_config.maxSeqLen,
                                                        decoded.batch * decoded.seq);
        if (!ids || ids->ids.size() != decoded.tokens.size())
            return QStringLiteral("the microbatch's own token frame does not decode");
        for (std::size_t i = 0; i < decoded.tokens.size(); ++i)
            if (decoded.tokens[i] != ids->ids[i])
                return QStringLiteral("the activation carries token ids that are not the microbatch's");
    }
    if (!stats::allFinite(decoded.values))
        return QStringLiteral("the %1 has values that are not finite")
            .arg(activation ? u"activation" : u"gradient");
    const stats::RowRms rms =
        stats::rowRms(decoded.values, std::size_t(decoded.width), std::size_t(decoded.dimension));
    if (rms.max > m_settings.maxRms) {
        out->bound = std::isfinite(rms.max);
        return QStringLiteral("a token's RMS is %1 (most allowed: %2)")
            .arg(rms.max, 0, 'g', 3)
            .arg(m_settings.maxRms);
    }
    if (rms.max == 0)
        return QStringLiteral("the %1 is all zeros").arg(activation ? u"activation" : u"gradient");
    // The task's own input sent back as its output: a middle stage's activation, or a backward's gradient.
    const std::span<const std::uint8_t> own =
        activation ? (task.stage > 0 ? task.input : std::span<const std::uint8_t>())
                   : (last ? std::span<const std::uint8_t>() : task.gradientIn);
    // The bytes, not the values: decoding the input again would double the check's cost, and an
    // echo altered by a byte is no stage's output either (the audits judge it).
    if (!own.empty() && own.size() == task.output.size() &&
        std::equal(own.begin(), own.end(), task.output.begin()))
        return QStringLiteral("the output is the task's own input sent back");
    *out = Decoded{std::move(decoded.values), rms.mean};
    return std::nullopt;
}

std::optional<QString> ResultCheck::monitorChecks(const TaskEvidence& task, Decoded* decoded) {
    using protocol::TaskKind;
    using Metric = StageMonitor::Metric;
    std::vector<StageMonitor::Sample> samples;
    if (task.kind == TaskKind::ForwardBackward && task.loss)
        samples.push_back({Metric::Loss, *task.loss});
    const bool activation = task.kind == TaskKind::Forward;
    if (!decoded->values.empty()) {
        const std::span<const float> values(decoded->values);
        samples.push_back({activation ? Metric::Rms : Metric::GradientRms, decoded->meanRms});
        if (activation && task.stage > 0) {
            if (const Kept* in = kept(task.microbatch, task.stage - 1, true, task.input))
                samples.push_back({Metric::Change, stats::relativeError(values, in->values)});
        } else if (task.kind == TaskKind::Backward) {
            if (const Kept* in = kept(task.microbatch, task.stage + 1, false, task.gradientIn))
                samples.push_back({Metric::Cosine, stats::cosine(values, in->values)});
        }
    }
    // A suspicious result is used: the next stage's change is measured against it. A vetted node's
    // results teach the statistics, suspicious or not: training moves honest values, and a window
    // that skipped the suspicious ones would stop following them.
    std::optional<QString> outlier = m_monitor.observe(task.stage, samples, vetted(task.node));
    // Kept for the result that takes it: a forward output is the next stage's input; a gradient is
    // a middle stage's incoming gradient (stage 1's goes to stage 0, which sends nothing back).
    if (!decoded->values.empty() && (activation || task.stage >= 2))
        keep(task, activation, std::move(*decoded));
    return outlier;
}

const ResultCheck::Kept* ResultCheck::kept(qint64 microbatch, int stage, bool activation,
                                           std::span<const std::uint8_t> bytes) const {
    const auto it = m_kept.find({microbatch, stage, activation});
    if (it == m_kept.end() || it->second.hash != qHashBits(bytes.data(), bytes.size()))
        return nullptr; // evicted, or another result than the one this task took
    return &it->second;
}

void ResultCheck::keep(const TaskEvidence& task, bool activation, Decoded&& decoded) {
    const KeptKey key{task.microbatch, task.stage, activation};
    if (auto it = m_kept.find(key); it != m_kept.end()) { // a phase run again: the newer result
        m_keptFloats -= qint64(it->second.values.size());
        m_kept.erase(it);
        m_keptOrder.erase(std::find(m_keptOrder.begin(), m_keptOrder.end(), key));
    }
    const auto size = qint64(decoded.values.size());
    if (size > m_settings.keptFloats)
        return;
    while (m_keptFloats + size > m_settings.keptFloats && !m_keptOrder.empty()) {
        auto it = m_kept.find(m_keptOrder.front());
        m_keptFloats -= qint64(it->second.values.size());
        m_kept.erase(it);
        m_keptOrder.pop_front();
    }
    m_kept.emplace(key, Kept{qHashBits(task.output.data(), task.output.size()), std::move(decoded.values)});
    m_keptOrder.push_back(key);
    m_keptFloats += size;
}

} // namespace tessera::coordinator
