// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/Bisection.h"

#include "coordinator/trust/Recompute.h"
#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"
#include "engine/StageEngine.h"
#include "protocol/TaskMessage.h"

#include <QRandomGenerator>

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

// A first stage's backward: it answers no tensor (its work is in its gradient share), and its trace has no
// gradient for the stage's input (tokens).
bool firstStageBackward(const CheckTask& task) {
    return task.stage == 0 && task.kind == protocol::TaskKind::Backward;
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

bool Bisection::traceable(const CheckTask& task, qint64 era, bool shareLook) const {
    using protocol::TaskKind;
    const bool last = task.stage == m_config.stages - 1;
    const bool kindTraceable = task.kind == TaskKind::Forward ? !last
                               : task.kind == TaskKind::Backward
                                   ? (task.stage > 0 || shareLook) && !last && !task.gradientIn.isNull()
                                   : last && task.kind == TaskKind::ForwardBackward;
    return kindTraceable && m_router.era(task.stage) == era;
}

// Asks every side of the case for its trace; false (nothing kept) when one could not be sent.
bool Bisection::send(qint64 id, Case c) {
    c.task.trace = true;
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
    return true;
}

bool Bisection::start(const CheckTask& task, qint64 era, const ReexecutionVerdict& verdict, const QString& a,
                      const protocol::HeldFrame& outputA, std::optional<double> lossA, const QString& b,
                      const protocol::HeldFrame& outputB, std::optional<double> lossB) {
    if (!traceable(task, era) || outputA.isNull() || outputB.isNull())
        return false;
    Case c{task,
           era,
           verdict,
           {Side{a, outputA, lossA, 0, std::nullopt, {}}, Side{b, outputB, lossB, 0, std::nullopt, {}}},
           std::nullopt};
    if (!send(m_nextCase++, std::move(c)))
        return false;
    ++m_started;
    qInfo("trust: bisecting microbatch %lld's %s (stage %d) between %s and %s", qlonglong(task.microbatch),
          qPrintable(protocol::taskKindName(task.kind)), task.stage, qPrintable(shortId(a)),
          qPrintable(shortId(b)));
    return true;
}

bool Bisection::spotCheck(const CheckTask& task, qint64 era, const QString& node,
                          const protocol::HeldFrame& output, std::optional<double> loss,
                          qint64 acceptedAtMs) {
    return startAlone(task, era, node, output, loss, acceptedAtMs, std::nullopt);
}

bool Bisection::startAlone(const CheckTask& task, qint64 era, const QString& node, const protocol::HeldFrame& output,
                           std::optional<double> loss, qint64 acceptedAtMs, std::optional<ShareSlice> share) {
    // A check each of a few nodes at once is plenty: every pending one holds its stage's step.
    constexpr std::size_t kMaxPending = 4;
    // A first stage's backward answers no tensor: only its share is looked at by its trace.
    const bool answered = !output.isNull() || (share && firstStageBackward(task));
    if (!traceable(task, era, share.has_value()) || !answered || m_cases.size() >= kMaxPending)
        return false;
    ReexecutionVerdict verdict;
    verdict.stage = task.stage;
    verdict.kind = task.kind;
    verdict.microbatch = task.microbatch;
    verdict.checked = node;
    verdict.acceptedAtMs = acceptedAtMs;
    if (!send(m_nextCase++,
              Case{task, era, verdict, {Side{node, output, loss, 0, std::nullopt, {}}}, std::move(share)}))
        return false;
    ++m_spotChecks;
    return true;
}

std::optional<ShareSegment> Bisection::drawShareSegment(int stage) {
    gpu::StageEngine* e = engine(stage);
    if (!e)
        return std::nullopt;
    const int segments = e->blocks() + (stage == m_config.stages - 1 ? 1 : 0);
    const int b = int(QRandomGenerator::system()->bounded(quint32(segments)));
    const auto [offset, count] = e->segmentParameters(b);
    if (count <= 0)
        return std::nullopt;
    return ShareSegment{b, offset, count};
}

bool Bisection::traceShare(const CheckTask& task, qint64 era, const QString& node,
                           const protocol::HeldFrame& output, std::optional<double> loss,
                           const ShareSegment& segment, std::shared_ptr<const std::vector<float>> values,
                           int microbatches, std::function<void(const ShareLook&)> done) {
    if (!values || qint64(values->size()) != segment.count || microbatches <= 0)
        return false;
    return startAlone(task, era, node, output, loss, 0,
                      ShareSlice{segment, std::move(values), microbatches, std::move(done), {}});
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

void Bisection::onFailed(qint64 taskId, const QString&, const QString& why, CheckSilence silence) {
    const auto found = m_taskToCase.constFind(taskId);
    if (found == m_taskToCase.constEnd())
        return;
    const qint64 caseId = found.value();
    m_taskToCase.erase(found);
    for (Side& side : m_cases.at(caseId).sides)
        if (side.taskId == taskId) {
            side.silence = why.isEmpty() ? QStringLiteral("no answer") : why;
            side.silenceKind = silence;
        }
    maybeJudge(caseId);
}

void Bisection::maybeJudge(qint64 caseId) {
    Case& c = m_cases.at(caseId);
    for (const Side& side : c.sides)
        if (!side.trace && side.silence.isEmpty())
            return;
    if (c.sides.size() == 1)
        judgeAlone(c);
    else
        judge(c);
    finish(caseId);
}

bool Bisection::excused(const Side& side) {
    switch (side.silenceKind) {
    case CheckSilence::Hid:
        return false;
    case CheckSilence::Withdrawn:
        return true;
    case CheckSilence::Left: // once a day (Departures)
        return m_departures->excuse(side.node, m_router.now());
    }
    return false;
}

void Bisection::judge(Case& c) {
    ReexecutionVerdict& v = c.verdict;
    v.unsettled = false;
    v.disputed.clear();
    // Silence is no dodge: whoever did not answer its trace is struck — unless it left (once a day) or we
    // took it off; then the dispute stays unsettled (both on probation, the credit in escrow).
    QString silence;
    for (const Side& side : c.sides)
        if (!side.silence.isEmpty()) {
            silence = side.silence;
            if (!excused(side))
                v.struck << side.node;
        }
    if (!v.struck.isEmpty()) {
        v.reason = QStringLiteral("it did not answer the trace of microbatch %1 a bisection asked of it (%2)")
                       .arg(c.task.microbatch)
                       .arg(silence);
        return;
    }
    if (!silence.isEmpty()) {
        v.unsettled = true;
        v.disputed = QStringList{c.sides[0].node, c.sides[1].node};
        v.reason += QStringLiteral("; a trace the bisection asked for was not answered (%1): nobody struck, it "
                                   "left or was taken off")
                        .arg(silence);
        return;
    }
    gpu::StageEngine* e = engine(c.task.stage);
    const std::int64_t size = c.task.tokens * m_config.dModel;
    const std::optional<Parting> at = e ? firstParting(c, size, e->blocks()) : std::nullopt;
    double errors[2] = {0, 0};
    if (!at || m_router.era(c.task.stage) != c.era || !recompute(c, *at, size, errors)) {
        v.unsettled = true;
        v.disputed = QStringList{c.sides[0].node, c.sides[1].node};
        v.reason += QStringLiteral("; the bisection could not recompute it (the stage's weights moved, or a "
                                   "trace was not the stage's)");
        return;
    }
    for (int i = 0; i < 2; ++i)
        (errors[i] > m_tolerance ? v.convicted : v.verified) << c.sides[i].node;
    if (v.convicted.isEmpty()) {
        v.unsettled = true;
        v.disputed = QStringList{c.sides[0].node, c.sides[1].node};
        v.reason += QStringLiteral("; the coordinator's recompute of %1 agrees with both").arg(describe(*at));
        v.verified.clear();
        return;
    }
    v.reason =
        QStringLiteral("its %1 of microbatch %2 (stage %3) parts from the coordinator's recompute of %4 "
                       "(per-token error %5; the other replica's: %6)")
            .arg(protocol::taskKindName(c.task.kind))
            .arg(c.task.microbatch)
            .arg(c.task.stage)
            .arg(describe(*at))
            .arg(std::max(errors[0], errors[1]), 0, 'g', 3)
            .arg(std::min(errors[0], errors[1]), 0, 'g', 3);
}

void Bisection::judgeAlone(Case& c) {
    ReexecutionVerdict& v = c.verdict;
    const Side& side = c.sides.front();
    if (!side.silence.isEmpty()) {
        const bool goes = excused(side);
        (goes ? v.disputed : v.struck) << side.node;
        v.unsettled = goes;
        v.reason =
            QStringLiteral("it did not answer the trace of microbatch %1 a spot check asked of it (%2)%3")
                .arg(c.task.microbatch)
                .arg(side.silence,
                     goes ? QStringLiteral(": not struck (it left, or was taken off; a second departure in a "
                                           "day is struck), its credit stays in escrow")
                          : QString());
        return;
    }
    gpu::StageEngine* e = engine(c.task.stage);
    if (!e || m_router.era(c.task.stage) != c.era)
        return; // nothing judged: the weights it ran on are not the checkpoint's any more
    const int blocks = e->blocks();
    const std::int64_t size = c.task.tokens * m_config.dModel;
    if (!fits(c, side, size, blocks)) {
        v.convicted << side.node;
        v.reason = QStringLiteral("its trace of microbatch %1 (stage %2) is not the stage's shape")
                       .arg(c.task.microbatch)
                       .arg(c.task.stage);
        return;
    }
    // Drawn now, after the trace came: every segment the stage has, each as likely (a first stage's block 0
    // has no input gradient to recompute: its backward is not a segment there).
    const bool forward = c.task.kind == protocol::TaskKind::Forward;
    const bool first = firstStageBackward(c.task);
    const int segments = forward ? blocks : 2 * blocks + (first ? 0 : 1);
    const int k = int(QRandomGenerator::system()->bounded(quint32(segments)));
    const Parting drawn =
        k < blocks    ? Parting{Parting::Forward, k}
        : k == blocks ? Parting{c.task.kind == protocol::TaskKind::ForwardBackward ? Parting::Head
                                                                                   : Parting::GivenGradient,
                                blocks}
                      : Parting{Parting::Backward, k - blocks - (first ? 0 : 1)};
    // A share check pins the top of the gradients too: the head's (from the last residual and the
    // targets) or the gradient it was given — what a trace scaled to fit a scaled share must part from.
    const Parting top{
        c.task.kind == protocol::TaskKind::ForwardBackward ? Parting::Head : Parting::GivenGradient, blocks};
    std::vector<Parting> pins{drawn}; // and its answer's encoding, where it answered one
    if (!first)
        pins.insert(pins.begin(), Parting{forward ? Parting::Encoding : Parting::GradientEncoding, blocks});
    if (c.share && !forward)
        pins.push_back(top);
    for (const Parting& at : pins) {
        double errors[2] = {0, 0};
        if (!recompute(c, at, size, errors))
            return; // ours to fail (a weight read): nothing judged
        if (errors[0] > m_tolerance) {
            v.convicted << side.node;
            v.reason = QStringLiteral(
                           "its %1 of microbatch %2 (stage %3) parts from the coordinator's recompute of %4 "
                           "from its own trace (per-token error %5; a spot check: no other replica could "
                           "re-execute it)")
                           .arg(protocol::taskKindName(c.task.kind))
                           .arg(c.task.microbatch)
                           .arg(c.task.stage)
                           .arg(describe(at))
                           .arg(errors[0], 0, 'g', 3);
            return;
        }
    }
    v.verified << side.node;
    ++m_spotChecksPassed;
    if (c.share)
        judgeShare(c, size);
}

void Bisection::judgeShare(Case& c, std::int64_t size) {
    ShareSlice& share = *c.share;
    gpu::StageEngine& e = *engine(c.task.stage);
    const int blocks = e.blocks();
    const int b = share.segment.segment;
    const std::vector<float>& trace = *c.sides.front().trace;
    const auto row = [&](std::int64_t i) {
        return std::span<const float>(trace).subspan(std::size_t(i * size), std::size_t(size));
    };
    if (!loadWeights(e, c.task.stage, b))
        return;
    // Block b's from the residual before it and the gradient after it (rows 2L − 1 − b); the head's from
    // the last residual and the targets.
    const Result<std::vector<float>> g =
        b < blocks
            ? e.segmentWeightGradient(b, bytesOf(c.task.input), b > 0 ? row(b - 1) : std::span<const float>(),
                                      row(2 * blocks - 1 - b), {})
            : e.segmentWeightGradient(b, bytesOf(c.task.input), row(blocks - 1), {}, bytesOf(c.task.targets));
    if (!g || qint64(g->size()) != share.segment.count) {
        qWarning("trust: a share check could not recompute %s: %s",
                 qPrintable(b < blocks ? QStringLiteral("block %1").arg(b) : QStringLiteral("the head")),
                 g ? "a gradient of another size" : g.message().c_str());
        return;
    }
    const std::vector<float>& s = *share.values;
    double dot = 0, gg = 0, ss = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        dot += double((*g)[i]) * s[i];
        gg += double((*g)[i]) * (*g)[i];
        ss += double(s[i]) * s[i];
    }
    if (!(gg > 0) || !std::isfinite(gg))
        return; // a gradient of zeros: nothing to judge by
    share.look.outcome = ShareLook::Held;
    share.look.alignment = double(share.microbatches) * dot / gg;
    share.look.normRatio = std::sqrt(ss / gg);
    share.look.segment =
        b < blocks ? QStringLiteral("block %1's weights").arg(b) : QStringLiteral("the head's weights");
}

QString Bisection::describe(const Parting& at) {
    switch (at.kind) {
    case Parting::Forward:
        return QStringLiteral("block %1 of the stage").arg(at.block);
    case Parting::Encoding:
        return QStringLiteral("the encoding of its output");
    case Parting::Head:
        return QStringLiteral("the head's loss and gradient");
    case Parting::GivenGradient:
        return QStringLiteral("the gradient it was given");
    case Parting::Backward:
        return QStringLiteral("block %1's backward").arg(at.block);
    case Parting::GradientEncoding:
        return QStringLiteral("the encoding of its gradient (and its loss)");
    }
    return {};
}

namespace {

// Row i of a trace's rows of `size` values.
std::span<const float> part(const std::vector<float>& trace, std::int64_t i, std::int64_t size) {
    return std::span<const float>(trace).subspan(std::size_t(i * size), std::size_t(size));
}

} // namespace

std::optional<Bisection::Parting> Bisection::firstParting(const Case& c, std::int64_t size,
                                                          int blocks) const {
    const bool forward = c.task.kind == protocol::TaskKind::Forward;
    for (const Side& side : c.sides)
        if (!fits(c, side, size, blocks))
            return std::nullopt;
    for (int k = 0; k < blocks; ++k)
        if (stats::worstRowError(part(*c.sides[0].trace, k, size), part(*c.sides[1].trace, k, size),
                                 std::size_t(m_config.dModel)) > m_tolerance)
            return Parting{Parting::Forward, k};
    if (forward) // the residuals agree throughout: the answers part in the encoding
        return Parting{Parting::Encoding, blocks};
    return firstGradientParting(c, size, blocks);
}

bool Bisection::fits(const Case& c, const Side& side, std::int64_t size, int blocks) const {
    const bool forward = c.task.kind == protocol::TaskKind::Forward;
    const bool last = c.task.kind == protocol::TaskKind::ForwardBackward;
    const std::int64_t rows = forward ? blocks : 2 * blocks + (firstStageBackward(c.task) ? 0 : 1);
    return blocks > 0 && side.trace && std::int64_t(side.trace->size()) == size * rows + (last ? 1 : 0);
}

// Row blocks + j of a backward's trace: the gradient with respect to the residual after block
// blocks − 1 − j (j = blocks: the stage's input).
std::optional<Bisection::Parting> Bisection::firstGradientParting(const Case& c, std::int64_t size,
                                                                  int blocks) const {
    const bool last = c.task.kind == protocol::TaskKind::ForwardBackward;
    const auto parts = [&](std::int64_t row) {
        return stats::worstRowError(part(*c.sides[0].trace, row, size), part(*c.sides[1].trace, row, size),
                                    std::size_t(m_config.dModel)) > m_tolerance;
    };
    const bool lossesPart = last && !(std::abs(c.sides[0].trace->back() - c.sides[1].trace->back()) <= 0.02f);
    if (parts(blocks) || lossesPart)
        return Parting{last ? Parting::Head : Parting::GivenGradient, blocks};
    for (int j = 1; j <= blocks; ++j)
        if (parts(blocks + j))
            return Parting{Parting::Backward, blocks - j};
    return Parting{Parting::GradientEncoding, 0};
}

bool Bisection::loadWeights(gpu::StageEngine& e, int stage, int segment) {
    const auto [offset, count] = e.segmentParameters(segment);
    if (count == 0)
        return true;
    Result<std::vector<float>> weights = m_weights(stage, offset, count);
    return weights && e.setWeightsRange(offset, e.parameterCount(), *weights);
}

bool Bisection::recompute(Case& c, const Parting& at, std::int64_t size, double errors[2]) {
    gpu::StageEngine& e = *engine(c.task.stage);
    const std::span<const std::uint8_t> input = bytesOf(c.task.input);
    const std::vector<float>& agreed = *c.sides[0].trace;
    const int blocks = e.blocks();
    const auto compare = [&](const std::vector<float>& mine, std::int64_t row) {
        for (std::size_t i = 0; i < c.sides.size(); ++i)
            errors[i] =
                stats::worstRowError(mine, part(*c.sides[i].trace, row, size), std::size_t(m_config.dModel));
        return true;
    };
    Result<std::vector<float>> mine = makeError("nothing recomputed");
    switch (at.kind) {
    case Parting::Forward:
        if (!loadWeights(e, c.task.stage, at.block))
            return false;
        mine = e.forwardSegment(at.block, input,
                                at.block > 0 ? part(agreed, at.block - 1, size) : std::span<const float>());
        return mine && compare(*mine, at.block);
    case Parting::GivenGradient:
        mine = e.decodeGradientInput(bytesOf(c.task.gradientIn), input);
        return mine && compare(*mine, blocks);
    case Parting::Head:
        return loadWeights(e, c.task.stage, blocks) && recomputeHead(c, size, errors);
    case Parting::Backward: // block b's input gradient from the agreed one after it, through its forward
        if (!loadWeights(e, c.task.stage, at.block))
            return false;
        mine = e.backwardSegment(at.block, input,
                                 at.block > 0 ? part(agreed, at.block - 1, size) : std::span<const float>(),
                                 part(agreed, 2 * blocks - 1 - at.block, size));
        return mine && compare(*mine, 2 * blocks - at.block);
    case Parting::Encoding:
    case Parting::GradientEncoding:
        return recomputeEncoding(c, at, size, errors);
    }
    return false;
}

bool Bisection::recomputeHead(Case& c, std::int64_t size, double errors[2]) {
    gpu::StageEngine& e = *engine(c.task.stage);
    const int blocks = e.blocks();
    Result<std::vector<float>> mine = e.headSegment(bytesOf(c.task.input), bytesOf(c.task.targets),
                                                    part(*c.sides[0].trace, blocks - 1, size));
    if (!mine)
        return false;
    for (std::size_t i = 0; i < c.sides.size();
         ++i) // the gradient at the last residual, and the trace's loss
        errors[i] =
            std::abs(mine->back() - c.sides[i].trace->back()) > 0.02f
                ? INFINITY
                : stats::worstRowError(std::span<const float>(*mine).first(std::size_t(size)),
                                       part(*c.sides[i].trace, blocks, size), std::size_t(m_config.dModel));
    return true;
}

bool Bisection::recomputeEncoding(Case& c, const Parting& at, std::int64_t size, double errors[2]) {
    gpu::StageEngine& e = *engine(c.task.stage);
    const std::span<const std::uint8_t> input = bytesOf(c.task.input);
    const std::vector<float>& agreed = *c.sides[0].trace;
    const int blocks = e.blocks();
    const bool forward = at.kind == Parting::Encoding;
    Result<gpu::Bytes> frame = forward ? e.encodeOutput(input, part(agreed, blocks - 1, size))
                                       : e.encodeGradientOutput(input, part(agreed, 2 * blocks, size));
    const auto decode = [&](std::span<const std::uint8_t> bytes) {
        return forward ? m_decoder->activationForChecks(bytes) : m_decoder->gradientForChecks(bytes);
    };
    Result<gpu::DecodedFrame> mine = frame ? decode(*frame) : frame.error();
    if (!mine)
        return false;
    const bool last = c.task.kind == protocol::TaskKind::ForwardBackward;
    for (std::size_t i = 0; i < c.sides.size(); ++i) {
        Result<gpu::DecodedFrame> theirs = decode(bytesOf(c.sides[i].output));
        errors[i] =
            theirs ? stats::worstRowError(mine->values, theirs->values, std::size_t(mine->width)) : INFINITY;
        // A last stage's answered loss against the loss both traces agree on.
        if (last && !(c.sides[i].loss && std::abs(*c.sides[i].loss - double(agreed.back())) <= 0.02))
            errors[i] = INFINITY;
    }
    return true;
}

gpu::StageEngine* Bisection::engine(int stage) {
    if (const auto it = m_engines.find(stage); it != m_engines.end())
        return it->second.get();
    std::unique_ptr<gpu::StageEngine> made = cpuStageEngine(m_config, stage);
    return made ? (m_engines[stage] = std::move(made)).get() : nullptr;
}

void Bisection::finish(qint64 caseId) {
    const auto it = m_cases.find(caseId);
    ReexecutionVerdict verdict = std::move(it->second.verdict);
    const int stage = it->second.task.stage;
    const bool alone = it->second.sides.size() == 1;
    const bool silent = alone && !it->second.sides.front().silence.isEmpty();
    std::optional<ShareSlice> share = std::move(it->second.share);
    m_cases.erase(it);
    if (verdict.unsettled)
        ++m_unsettled;
    if (!verdict.convicted.isEmpty())
        ++(alone ? m_spotConvictions : m_convictions);
    Q_EMIT judged(verdict);
    if (share) { // after the verdict: a node convicted by its trace is struck before its share's case closes
        // A share whose trace never came is left out, struck or not (a node that leaves when asked, even
        // excused, does not get an unshown share into the mean).
        if (!verdict.convicted.isEmpty() || !verdict.struck.isEmpty() || silent)
            share->look.outcome = ShareLook::TraceFailed;
        share->done(share->look);
    }
    if (!pendingOn(stage))
        Q_EMIT settled(stage);
}

} // namespace tessera::coordinator
