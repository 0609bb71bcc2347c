// SPDX-License-Identifier: Apache-2.0
// TrainingLoop: microbatches in, steps out, and the numbers of both.
#include "coordinator/training/TrainingLoop.h"

#include "coordinator/training/Averager.h"
#include "coordinator/training/GradientAverager.h"
#include "coordinator/training/StageCheckpoints.h"
#include "train/TrainingData.h"

#include <QJsonArray>

#include <cmath>
#include <utility>

namespace tessera::coordinator {

namespace {

constexpr qint64 kRateWindowMs = 30'000;
constexpr std::size_t kLossCurvePoints = 500;

QByteArray bytes(const gpu::Bytes& b) {
    return QByteArray(reinterpret_cast<const char*>(b.data()), qsizetype(b.size()));
}

} // namespace

TrainingLoop::TrainingLoop(LoopSettings settings, int stages, TrainingStore& store, TrainingState& state,
                           gpu::TrainingData& data, StageCheckpoints& checkpoints, Averager& averager,
                           SendText sendText, Clock clock)
    : m_settings(settings)
    , m_stages(stages)
    , m_store(store)
    , m_state(state)
    , m_data(data)
    , m_checkpoints(checkpoints)
    , m_averager(averager)
    , m_sendText(std::move(sendText))
    , m_clock(std::move(clock))
    , m_savedJoins(state.joins)
    , m_savedLeaves(state.leaves)
    , m_window(settings.microbatchesPerStep, settings.pipelineDepth, state.step, settings.maxSteps) {}

void TrainingLoop::attach(Router& router) {
    m_router = &router;
    if (m_settings.maxSteps > 0 && m_state.step >= m_settings.maxSteps)
        router.setIssuing(false);
}

std::optional<MicrobatchInput> TrainingLoop::feed() {
    const std::optional<qint64> step = m_window.next();
    if (!step)
        return std::nullopt;
    Result<gpu::TrainingMicrobatch> mb = m_data.next(m_settings.batch, m_settings.seq);
    if (!mb) {
        const QString why = QString::fromStdString(mb.message());
        if (m_dataError.isEmpty()) // once, not at every microbatch a node asks for (each names its window)
            qWarning("trainer: the training data failed, no microbatch is issued until it reads again: %s",
                     qPrintable(why));
        m_dataError = why;
        return std::nullopt;
    }
    if (!m_dataError.isEmpty()) {
        qInfo("trainer: the training data reads again; microbatches are issued");
        m_dataError.clear();
    }
    m_window.issued(*step);
    m_fedStep = *step;
    return MicrobatchInput{bytes(mb->inputs), bytes(mb->targets), m_settings.batch, m_settings.seq, *step};
}

void TrainingLoop::onIssued(qint64 microbatch, qint64 tokens) {
    m_store.issued(microbatch, m_fedStep, tokens, m_clock());
    ++m_state.issued;
}

void TrainingLoop::onCompleted(const Microbatch& mb) {
    const qint64 t = m_clock();
    m_store.completed(mb, t);
    ++m_state.completed;
    m_state.tokens += mb.tokens;
    StepProgress& progress = m_steps[m_window.completed(mb.step)];
    for (const AcceptedTask& task : mb.accepted) {
        m_state.creditedFlop += task.flop;
        if (task.kind == protocol::TaskKind::Backward || task.kind == protocol::TaskKind::ForwardBackward)
            ++progress.work[task.nodeId];
    }
    m_recent.emplace_back(t, mb.tokens);
    while (!m_recent.empty() && m_recent.front().first < t - kRateWindowMs)
        m_recent.pop_front();
    if (std::isfinite(mb.loss)) {
        progress.lossSum += mb.loss;
        ++progress.lossCount;
    }
    while (m_window.complete())
        endStep();
}

void TrainingLoop::onAbandoned(const Microbatch& mb) {
    m_store.abandoned(mb, m_clock());
    ++m_state.abandoned;
    m_window.abandoned(mb.step); // the feed gives its step another
}

void TrainingLoop::endStep() {
    const qint64 t = m_clock();
    const qint64 step = m_state.step = m_window.end();
    const StepProgress progress = m_steps[step];
    m_steps.erase(m_steps.begin(), m_steps.upper_bound(step));
    const double loss = progress.lossCount > 0 ? progress.lossSum / progress.lossCount : std::nan("");
    const QHash<QString, int>& work = progress.work;
    if (std::isfinite(loss))
        m_lastLoss = loss;
    if (m_beforeStep)
        m_beforeStep();
    if (m_gradients) {
        std::vector<QStringList> replicas;
        for (int s = 0; s < m_stages; ++s)
            replicas.push_back(m_router->nodesOf(s));
        m_gradients->start(step, replicas, work); // the weights change when it closes
    } else {
        for (int s = 0; s < m_stages; ++s)
            for (const QString& node : m_router->nodesOf(s))
                m_sendText(node, protocol::Step{step});
        m_router->stepSent();
        m_window.updated(step);
    }
    m_store.stepped(step, loss, m_state, t);
    if (std::isfinite(loss)) {
        m_lossCurve.push_back({step, loss, m_state.tokens, t});
        if (m_lossCurve.size() > kLossCurvePoints)
            m_lossCurve.pop_front();
    }
    if (m_averager.isAveragingStep(step))
        for (int s = 0; s < m_stages; ++s)
            m_averager.startRound(s, step, m_router->nodesOf(s));
    if (m_settings.checkpointEvery > 0 && step % m_settings.checkpointEvery == 0)
        publishCheckpoints();
    if (m_settings.maxSteps > 0 && step >= m_settings.maxSteps) {
        qInfo("trainer: step %lld reached: no new microbatches", qlonglong(step));
        m_router->setIssuing(false);
    }
}

void TrainingLoop::exchangeClosed(qint64 step) {
    m_router->stepSent();
    m_window.updated(step);
    m_router->kick();
}

void TrainingLoop::flush() {
    // Joins and leaves between steps are kept too (a crash loses at most a flush interval).
    if (m_state.joins != m_savedJoins || m_state.leaves != m_savedLeaves) {
        m_store.saveState(m_state.step, m_state, m_clock());
        m_savedJoins = m_state.joins;
        m_savedLeaves = m_state.leaves;
    }
    if (Status s = m_store.flush(); !s)
        qWarning("trainer: writing the training state failed (kept for the next try): %s",
                 s.message().c_str());
}

void TrainingLoop::publishCheckpoints() {
    flush();
    Result<int> n = m_checkpoints.publish(m_state.step, m_clock());
    if (!n)
        qWarning("trainer: %s", n.message().c_str());
    else if (*n > 0)
        qInfo("trainer: step %lld: published new checkpoints of %d stages", qlonglong(m_state.step), *n);
}

QJsonObject TrainingLoop::status() const {
    const qint64 t = m_clock();
    qint64 recentTokens = 0;
    qint64 oldest = t;
    for (const auto& [at, tokens] : m_recent)
        if (at >= t - kRateWindowMs) {
            recentTokens += tokens;
            oldest = std::min(oldest, at);
        }
    const double span = std::max(1.0, double(t - std::min(oldest, t - 1000)) / 1000.0);
    QJsonArray curve;
    for (const LossPoint& p : m_lossCurve)
        curve.append(QJsonArray{p.step, p.loss, p.tokens});
    const RouterCounters& c = m_router->counters();
    return QJsonObject{
        {QStringLiteral("step"), m_state.step},
        {QStringLiteral("loss"), std::isfinite(m_lastLoss) ? QJsonValue(m_lastLoss) : QJsonValue()},
        {QStringLiteral("tokens"), m_state.tokens},
        {QStringLiteral("tokens_per_second"), double(recentTokens) / span},
        {QStringLiteral("microbatches"), QJsonObject{{QStringLiteral("issued"), m_state.issued},
                                                     {QStringLiteral("completed"), m_state.completed},
                                                     {QStringLiteral("abandoned"), m_state.abandoned},
                                                     {QStringLiteral("in_flight"), m_router->inFlight()},
                                                     {QStringLiteral("retries"), c.retries},
                                                     {QStringLiteral("duplicates"), c.duplicates}}},
        {QStringLiteral("microbatches_per_step"), m_settings.microbatchesPerStep},
        // 1: synchronous steps; 2: the asynchronous pipeline (two steps under way at once).
        {QStringLiteral("pipeline_depth"), m_window.depth()},
        {QStringLiteral("credits_granted_flop"), m_state.creditedFlop},
        {QStringLiteral("joins"), m_state.joins},
        {QStringLiteral("leaves"), m_state.leaves},
        {QStringLiteral("loss_curve"), curve},
        {QStringLiteral("data_error"), m_dataError.isEmpty() ? QJsonValue() : QJsonValue(m_dataError)},
    };
}

} // namespace tessera::coordinator
