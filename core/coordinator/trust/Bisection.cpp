// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/Bisection.h"

#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"
#include "engine/StageEngine.h"
#include "protocol/TaskMessage.h"

#include <cmath>

namespace tessera::coordinator {

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

std::span<const std::uint8_t> bytesOf(const protocol::HeldFrame& f) {
    return {reinterpret_cast<const std::uint8_t*>(f.frame.payload.data()),
            std::size_t(f.frame.payload.size())};
}

} // namespace

Bisection::Bisection(const gpu::ModelConfig& config, double tolerance, Router& router, Weights weights,
                     std::unique_ptr<gpu::FrameDecoder> decoder)
    : m_config(config)
    , m_tolerance(tolerance)
    , m_router(router)
    , m_weights(std::move(weights))
    , m_decoder(std::move(decoder)) {
    connect(&m_router, &Router::checkAnswered, this,
            [this](qint64 taskId, const QString& node, const protocol::HeldFrame& output,
                   std::optional<double>) { onAnswered(taskId, node, output); });
    connect(&m_router, &Router::checkFailed, this, &Bisection::onFailed);
}

Bisection::~Bisection() = default;

Result<std::unique_ptr<Bisection>> Bisection::create(const gpu::ModelConfig& config, double tolerance,
                                                     Router& router, Weights weights) {
    Result<std::unique_ptr<gpu::FrameDecoder>> decoder = gpu::FrameDecoder::create(config);
    if (!decoder)
        return makeError("bisection: " + decoder.message());
    return std::unique_ptr<Bisection>(
        new Bisection(config, tolerance, router, std::move(weights), std::move(*decoder)));
}

bool Bisection::start(const CheckTask& task, qint64 era, const ReexecutionVerdict& verdict, const QString& a,
                      const protocol::HeldFrame& outputA, const QString& b,
                      const protocol::HeldFrame& outputB) {
    if (task.kind != protocol::TaskKind::Forward || task.stage >= m_config.stages - 1 ||
        m_router.era(task.stage) != era || outputA.isNull() || outputB.isNull())
        return false;
    Case c;
    c.task = task;
    c.task.trace = true;
    c.era = era;
    c.verdict = verdict;
    c.sides[0] = Side{a, outputA, 0, std::nullopt, {}};
    c.sides[1] = Side{b, outputB, 0, std::nullopt, {}};
    const qint64 id = m_nextCase++;
    for (Side& side : c.sides) {
        const std::optional<qint64> sent = m_router.sendCheck(side.node, c.task);
        if (!sent) {
            for (const Side& other : c.sides)
                if (other.taskId != 0)
                    m_taskToCase.remove(other.taskId);
            return false;
        }
        side.taskId = *sent;
        m_taskToCase.insert(*sent, id);
    }
    m_cases.emplace(id, std::move(c));
    ++m_started;
    qInfo("trust: bisecting microbatch %lld's forward (stage %d) between %s and %s",
          qlonglong(task.microbatch), task.stage, qPrintable(shortId(a)), qPrintable(shortId(b)));
    return true;
}

bool Bisection::pendingOn(int stage) const {
    return std::any_of(m_cases.begin(), m_cases.end(),
                       [&](const auto& c) { return c.second.task.stage == stage; });
}

void Bisection::onAnswered(qint64 taskId, const QString&, const protocol::HeldFrame& output) {
    const auto found = m_taskToCase.constFind(taskId);
    if (found == m_taskToCase.constEnd())
        return;
    const qint64 caseId = found.value();
    m_taskToCase.erase(found);
    for (Side& side : m_cases.at(caseId).sides)
        if (side.taskId == taskId) {
            Result<std::vector<float>> values = output.isNull()
                                                    ? Result<std::vector<float>>(makeError("no trace"))
                                                    : protocol::partitionValues(output.frame);
            side.trace = values ? std::move(*values) : std::vector<float>();
        }
    maybeJudge(caseId);
}

void Bisection::onFailed(qint64 taskId, const QString&, const QString& why) {
    const auto found = m_taskToCase.constFind(taskId);
    if (found == m_taskToCase.constEnd())
        return;
    const qint64 caseId = found.value();
    m_taskToCase.erase(found);
    for (Side& side : m_cases.at(caseId).sides)
        if (side.taskId == taskId)
            side.silence = why.isEmpty() ? QStringLiteral("no answer") : why;
    maybeJudge(caseId);
}

void Bisection::maybeJudge(qint64 caseId) {
    Case& c = m_cases.at(caseId);
    for (const Side& side : c.sides)
        if (!side.trace && side.silence.isEmpty())
            return;
    judge(c);
    finish(caseId);
}

void Bisection::judge(Case& c) {
    ReexecutionVerdict& v = c.verdict;
    v.unsettled = false;
    v.disputed.clear();
    // Silence is no dodge: whoever did not answer its trace is struck (a pause can be honest).
    for (const Side& side : c.sides)
        if (!side.silence.isEmpty())
            v.struck << side.node;
    if (!v.struck.isEmpty()) {
        v.reason = QStringLiteral("it did not answer the trace of microbatch %1 a bisection asked of it (%2)")
                       .arg(c.task.microbatch)
                       .arg(c.sides[0].silence.isEmpty() ? c.sides[1].silence : c.sides[0].silence);
        return;
    }
    gpu::StageEngine* e = engine(c.task.stage);
    const std::int64_t size = c.task.tokens * m_config.dModel;
    const int blocks = e ? e->blocks() : 0;
    const int segment = e ? firstParting(c, size, blocks) : -1;
    double errors[2] = {0, 0};
    if (segment < 0 || m_router.era(c.task.stage) != c.era || !recompute(c, segment, size, errors)) {
        v.unsettled = true;
        v.disputed = QStringList{c.sides[0].node, c.sides[1].node};
        v.reason += QStringLiteral("; the bisection could not recompute it (the stage's weights moved, or a "
                                   "trace was not the stage's)");
        return;
    }
    const QString where = segment == blocks ? QStringLiteral("the encoding of its output")
                                            : QStringLiteral("block %1 of the stage").arg(segment);
    for (int i = 0; i < 2; ++i) {
        if (errors[i] > m_tolerance)
            v.convicted << c.sides[i].node;
        else
            v.verified << c.sides[i].node;
    }
    if (v.convicted.isEmpty()) {
        v.unsettled = true;
        v.disputed = QStringList{c.sides[0].node, c.sides[1].node};
        v.reason += QStringLiteral("; the coordinator's recompute of %1 agrees with both").arg(where);
        v.verified.clear();
        return;
    }
    v.reason =
        QStringLiteral("its forward of microbatch %1 (stage %2) parts from the coordinator's recompute of "
                       "%3 (per-token error %4; the other replica's: %5)")
            .arg(c.task.microbatch)
            .arg(c.task.stage)
            .arg(where)
            .arg(std::max(errors[0], errors[1]), 0, 'g', 3)
            .arg(std::min(errors[0], errors[1]), 0, 'g', 3);
}

int Bisection::firstParting(const Case& c, std::int64_t size, int blocks) const {
    for (const Side& side : c.sides)
        if (blocks <= 0 || std::int64_t(side.trace->size()) != size * blocks)
            return -1;
    const std::span<const float> a(*c.sides[0].trace), b(*c.sides[1].trace);
    for (int k = 0; k < blocks; ++k)
        if (stats::worstRowError(a.subspan(std::size_t(k * size), std::size_t(size)),
                                 b.subspan(std::size_t(k * size), std::size_t(size)),
                                 std::size_t(m_config.dModel)) > m_tolerance)
            return k;
    return blocks; // the residuals agree throughout: the answers part in the encoding
}

bool Bisection::recompute(Case& c, int segment, std::int64_t size, double errors[2]) {
    gpu::StageEngine& e = *engine(c.task.stage);
    const std::span<const std::uint8_t> input = bytesOf(c.task.input);
    const std::span<const float> agreed(*c.sides[0].trace);
    const int blocks = e.blocks();
    if (segment == blocks) { // the codec's encoding of the agreed last residual, against both answers
        Result<gpu::Bytes> frame = e.encodeOutput(input, agreed.subspan(std::size_t((blocks - 1) * size)));
        Result<gpu::DecodedFrame> mine = frame ? m_decoder->activationForChecks(*frame) : frame.error();
        if (!mine)
            return false;
        for (int i = 0; i < 2; ++i) {
            Result<gpu::DecodedFrame> theirs = m_decoder->activationForChecks(bytesOf(c.sides[i].output));
            errors[i] = theirs ? stats::worstRowError(mine->values, theirs->values, std::size_t(mine->width))
                               : INFINITY;
        }
        return true;
    }
    // That one segment's weights, from the checkpoint (the replicas' until the step's update).
    const auto [offset, count] = e.segmentParameters(segment);
    Result<std::vector<float>> weights = m_weights(c.task.stage, offset, count);
    if (!weights || !e.setWeightsRange(offset, e.parameterCount(), *weights))
        return false;
    const std::span<const float> before =
        segment > 0 ? agreed.subspan(std::size_t((segment - 1) * size), std::size_t(size))
                    : std::span<const float>();
    Result<std::vector<float>> mine = e.forwardSegment(segment, input, before);
    if (!mine)
        return false;
    for (int i = 0; i < 2; ++i)
        errors[i] = stats::worstRowError(
            *mine,
            std::span<const float>(*c.sides[i].trace).subspan(std::size_t(segment * size), std::size_t(size)),
            std::size_t(m_config.dModel));
    return true;
}

gpu::StageEngine* Bisection::engine(int stage) {
    if (const auto it = m_engines.find(stage); it != m_engines.end())
        return it->second.get();
    gpu::StageEngineOptions options;
    options.config = m_config;
    options.stage = stage;
    options.device = "cpu";
    options.keepActivations = false;
    Result<std::unique_ptr<gpu::StageEngine>> made = gpu::StageEngine::create(options);
    if (!made) {
        qWarning("trust: no engine to bisect stage %d: %s", stage, made.message().c_str());
        return nullptr;
    }
    return (m_engines[stage] = std::move(*made)).get();
}

void Bisection::finish(qint64 caseId) {
    const auto it = m_cases.find(caseId);
    ReexecutionVerdict verdict = std::move(it->second.verdict);
    const int stage = it->second.task.stage;
    m_cases.erase(it);
    if (verdict.unsettled)
        ++m_unsettled;
    if (!verdict.convicted.isEmpty())
        ++m_convictions;
    Q_EMIT judged(verdict);
    if (!pendingOn(stage))
        Q_EMIT settled(stage);
}

} // namespace tessera::coordinator
