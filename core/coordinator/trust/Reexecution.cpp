// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/Reexecution.h"

#include "coordinator/trust/Verifiers.h"

#include "coordinator/trust/TensorStats.h"
#include "engine/FrameDecoder.h"

#include <cmath>

namespace tessera::coordinator {

namespace {

using protocol::TaskKind;

QString shortId(const QString& node) {
    return node.left(12);
}

} // namespace

Reexecution::Reexecution(ReexecutionSettings settings, Router& router, Clock clock, NetworkOf networkOf,
                         std::unique_ptr<gpu::FrameDecoder> decoder)
    : m_settings(settings)
    , m_router(router)
    , m_clock(std::move(clock))
    , m_networkOf(std::move(networkOf))
    , m_decoder(std::move(decoder)) {
    qRegisterMetaType<ReexecutionVerdict>();
    connect(&m_router, &Router::checkAnswered, this, &Reexecution::onAnswered);
    connect(&m_router, &Router::checkFailed, this, &Reexecution::onFailed);
}

Reexecution::~Reexecution() = default;

Result<std::unique_ptr<Reexecution>> Reexecution::create(const gpu::ModelConfig& config,
                                                         ReexecutionSettings settings, Router& router,
                                                         Clock clock, NetworkOf networkOf) {
    Result<std::unique_ptr<gpu::FrameDecoder>> decoder = gpu::FrameDecoder::create(config);
    if (!decoder)
        return makeError("re-execution: " + decoder.message());
    return std::unique_ptr<Reexecution>(
        new Reexecution(settings, router, std::move(clock), std::move(networkOf), std::move(*decoder)));
}

bool Reexecution::checkable(const Microbatch& mb, TaskKind kind) const {
    if (kind == TaskKind::Probe || (kind == TaskKind::Backward && mb.stage == 0))
        return false;
    if (m_router.era(mb.stage) != mb.taskEra || int(m_cases.size()) >= m_settings.maxPending)
        return false;
    for (const QString& node : m_router.nodesOf(mb.stage))
        if (node != mb.taskNode && m_router.mayVerify(node, mb.taskEra))
            return true;
    return false;
}

bool Reexecution::start(const QString& node, const Microbatch& mb, TaskKind kind,
                        const protocol::HeldFrame& output, std::optional<double> loss) {
    if (!checkable(mb, kind))
        return false;
    Case c;
    c.task = CheckTask::of(mb, kind);
    c.verdict.stage = mb.stage;
    c.verdict.kind = kind;
    c.verdict.microbatch = mb.id;
    c.verdict.checked = node;
    c.verdict.acceptedAtMs = m_clock();
    c.era = mb.taskEra;
    c.tried << node;
    std::optional<Answer> own = decode(node, c, output, loss);
    if (!own)
        return false; // the result checks decoded it: this cannot happen to an accepted result
    c.answers.push_back(std::move(*own));
    const qint64 id = m_nextCase++;
    Case& placed = m_cases.emplace(id, std::move(c)).first->second;
    if (!sendNext(id, placed)) {
        m_cases.erase(id);
        return false;
    }
    ++m_started;
    return true;
}

std::optional<Reexecution::Answer> Reexecution::decode(const QString& node, const Case& c,
                                                       const protocol::HeldFrame& output,
                                                       std::optional<double> loss) const {
    Answer a{node, {}, 0, loss, output};
    if (c.task.kind == TaskKind::Backward && c.task.stage == 0)
        return a;
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(output.frame.payload.data()),
                                              std::size_t(output.frame.payload.size()));
    Result<gpu::DecodedFrame> frame = c.task.kind == TaskKind::Forward ? m_decoder->activationForChecks(bytes)
                                                                        : m_decoder->gradientForChecks(bytes);
    if (!frame || frame->width <= 0)
        return std::nullopt;
    a.rows = std::move(frame->values);
    a.width = std::size_t(frame->width);
    return a;
}

double Reexecution::error(const Answer& a, const Answer& b) const {
    if (a.loss.has_value() != b.loss.has_value() ||
        (a.loss && !(std::abs(*a.loss - *b.loss) <= m_settings.lossTolerance)))
        return INFINITY;
    if (a.width != b.width || a.rows.size() != b.rows.size())
        return INFINITY;
    return stats::worstRowError(a.rows, b.rows, a.width);
}

bool Reexecution::sendNext(qint64 caseId, Case& c) {
    if (c.sends >= m_settings.maxVerifiers || m_router.era(c.task.stage) != c.era)
        return false;
    for (const QString& node : verifierCandidates(m_router, c.task.stage, c.era, c.tried, m_networkOf)) {
        c.tried << node;
        if (const std::optional<qint64> task = m_router.sendCheck(node, c.task)) {
            ++c.sends;
            m_taskToCase.insert(*task, caseId);
            return true;
        }
    }
    return false;
}

void Reexecution::onAnswered(qint64 taskId, const QString& node, const protocol::HeldFrame& output,
                             std::optional<double> loss) {
    const qint64 caseId = m_taskToCase.take(taskId);
    const auto it = m_cases.find(caseId);
    if (it == m_cases.end())
        return;
    Case& c = it->second;
    std::optional<Answer> answer = decode(node, c, output, loss);
    if (!answer) // what no stage computes: a frame that does not decode
        answer = Answer{node, {}, 0, std::nullopt, output};
    c.answers.push_back(std::move(*answer));
    if (decide(c))
        return close(caseId, true);
    if (!sendNext(caseId, c))
        close(caseId, false);
}

void Reexecution::onFailed(qint64 taskId, const QString& node, const QString& why) {
    const qint64 caseId = m_taskToCase.take(taskId);
    const auto it = m_cases.find(caseId);
    if (it == m_cases.end())
        return;
    qInfo("trust: re-execution of microbatch %lld (stage %d) on %s not answered: %s",
          qlonglong(it->second.task.microbatch), it->second.task.stage, qPrintable(shortId(node)),
          qPrintable(why));
    if (!sendNext(caseId, it->second))
        close(caseId, false);
}

bool Reexecution::decide(Case& c) {
    ReexecutionVerdict& v = c.verdict;
    const Answer& checked = c.answers.front();
    if (c.answers.size() == 2) {
        const double e = error(checked, c.answers[1]);
        if (e <= m_settings.tolerance) {
            v.verified = {checked.node, c.answers[1].node};
            v.worstError = e;
            return true;
        }
        v.disputed = {checked.node, c.answers[1].node};
        v.reason = QStringLiteral("answers of %1 and %2 differ (per-token error %3)")
                       .arg(shortId(checked.node), shortId(c.answers[1].node))
                       .arg(e, 0, 'g', 3);
        return false; // a referee is needed
    }
    // The referee's answer (the last) against the two that disagree.
    const Answer& first = c.answers[0];
    const Answer& second = c.answers[1];
    const Answer& referee = c.answers.back();
    const double e1 = error(referee, first), e2 = error(referee, second);
    const bool withFirst = e1 <= m_settings.tolerance, withSecond = e2 <= m_settings.tolerance;
    if (withFirst == withSecond) {
        v.unsettled = true;
        v.reason += withFirst ? QStringLiteral("; the referee %1 agrees with both").arg(shortId(referee.node))
                              : QStringLiteral("; the referee %1 agrees with neither").arg(shortId(referee.node));
        return true;
    }
    const Answer& right = withFirst ? first : second;
    const Answer& wrong = withFirst ? second : first;
    v.verified = {right.node, referee.node};
    v.convicted = {wrong.node};
    v.worstError = withFirst ? e1 : e2;
    v.reason = QStringLiteral("its %1 of microbatch %2 (stage %3) differs from two replicas' (per-token error %4)")
                   .arg(protocol::taskKindName(c.task.kind))
                   .arg(c.task.microbatch)
                   .arg(c.task.stage)
                   .arg(error(wrong, right), 0, 'g', 3);
    return true;
}

void Reexecution::close(qint64 caseId, bool decided) {
    const auto it = m_cases.find(caseId);
    if (it == m_cases.end())
        return;
    const bool referee = it->second.answers.size() >= 2 && it->second.verdict.verified.isEmpty() &&
                         !it->second.verdict.unsettled;
    // Two answers part and no third replica can referee: the coordinator bisects it.
    if (!decided && referee && m_settle) {
        const Case& c = it->second;
        if (m_settle(c.task, c.era, c.verdict, c.answers[0].node, c.answers[0].frame, c.answers[0].loss,
                     c.answers[1].node, c.answers[1].frame, c.answers[1].loss)) {
            m_cases.erase(it);
            for (auto t = m_taskToCase.begin(); t != m_taskToCase.end();)
                t = *t == caseId ? m_taskToCase.erase(t) : std::next(t);
            return;
        }
    }
    ReexecutionVerdict verdict = std::move(it->second.verdict);
    m_cases.erase(it);
    for (auto t = m_taskToCase.begin(); t != m_taskToCase.end();)
        t = *t == caseId ? m_taskToCase.erase(t) : std::next(t);
    if (!decided && referee) {
        // Two answers disagree and no third replica could run it: unsettled, not dropped.
        verdict.unsettled = true;
        verdict.reason += QStringLiteral("; no third replica to referee");
    } else if (!decided) {
        ++m_dropped;
        return;
    }
    if (verdict.unsettled)
        ++m_unsettled;
    else if (!verdict.convicted.isEmpty())
        ++m_convictions;
    else
        ++m_agreed;
    if (verdict.convicted.isEmpty() && !verdict.unsettled)
        m_worstAgreed = std::max(m_worstAgreed, verdict.worstError);
    Q_EMIT judged(verdict);
}

} // namespace tessera::coordinator
