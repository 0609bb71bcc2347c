// SPDX-License-Identifier: Apache-2.0
// Reclaim: a restarted coordinator takes each stage's current weights back from its nodes, checked.
#include "coordinator/training/Reclaim.h"

#include "coordinator/trust/RobustCombine.h"

#include <algorithm>
#include <cmath>

namespace tessera::coordinator {

namespace {

constexpr double kAdamStepBound = 2.0; // κ: a weight's AdamW move per step is at most ~1.17 lr

QString shortId(const QString& node) {
    return node.left(12);
}

double distance(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = double(a[i]) - double(b[i]);
        sum += d * d;
    }
    return std::sqrt(sum);
}

double norm(const std::vector<float>& a) {
    double sum = 0;
    for (float v : a)
        sum += double(v) * double(v);
    return std::sqrt(sum);
}

// Why the answer cannot be the stage's weights trained on from `reference` for `steps` steps, or
// empty when it can; `used`: the largest share of its bound a weight moved.
QString refusal(const std::vector<float>& answer, const std::vector<float>& reference, qint64 steps,
                const ReclaimSettings& settings, double& used) {
    used = 0;
    if (answer.size() != reference.size())
        return QStringLiteral("%1 values, the stage has %2").arg(answer.size()).arg(reference.size());
    const double k = double(std::max<qint64>(steps, 0) + settings.slackSteps);
    const double move = k * settings.learningRate;
    for (std::size_t i = 0; i < answer.size(); ++i) {
        if (!std::isfinite(answer[i]))
            return QStringLiteral("a weight that is not finite");
        const double c = std::abs(double(reference[i]));
        const double bound = move * (kAdamStepBound * (1 + settings.lookAhead) +
                                     settings.weightDecay * (c + move * kAdamStepBound));
        const double moved = std::abs(double(answer[i]) - double(reference[i]));
        if (moved > bound)
            return QStringLiteral("weight %1 moved %2 from the checkpoint; %3 steps of training move it "
                                  "at most %4")
                .arg(i)
                .arg(moved, 0, 'g', 3)
                .arg(qint64(k))
                .arg(bound, 0, 'g', 3);
        used = std::max(used, moved / bound);
    }
    return {};
}

} // namespace

Reclaim::Reclaim(ReclaimSettings settings, std::function<qint64(int stage)> stepsSinceCheckpoint,
                 Reference reference, FailedAudits failedAudits, SendText sendText, Clock clock)
    : m_settings(settings)
    , m_stepsSinceCheckpoint(std::move(stepsSinceCheckpoint))
    , m_reference(std::move(reference))
    , m_failedAudits(std::move(failedAudits))
    , m_sendText(std::move(sendText))
    , m_clock(std::move(clock)) {}

void Reclaim::expect(const QString& node, int stage) {
    m_expected.insert(node, stage);
}

bool Reclaim::holds(const QString& node) const {
    for (const auto& [stage, s] : m_stages)
        if (s.open && !s.closed && s.held.contains(node))
            return true;
    return false;
}

int Reclaim::waiting(int stage) const {
    const auto it = m_stages.find(stage);
    return it == m_stages.end() || !it->second.open || it->second.closed ? 0 : int(it->second.held.size());
}

bool Reclaim::onReady(const QString& node, int stage) {
    Stage& s = m_stages[stage];
    if (s.closed)
        return false;
    const bool expected = m_expected.value(node, -1) == stage;
    if (!s.open) {
        bool anyExpected = false;
        for (auto it = m_expected.cbegin(); it != m_expected.cend() && !anyExpected; ++it)
            anyExpected = it.value() == stage;
        if (!anyExpected) {
            s.closed = true; // nobody held this stage's weights: nothing to take back
            return false;
        }
        s.open = true;
        s.openedAtMs = m_clock();
        s.deadlineMs = s.openedAtMs + m_settings.deadlineMs;
        qInfo("reclaim: stage %d: taking its current weights back from the nodes that held them", stage);
    }
    if (!s.held.contains(node))
        s.held.append(node);
    if (expected && !s.asked.contains(node) && s.answers.find(node) == s.answers.end())
        ask(stage, s, node);
    maybeClose(stage);
    return true;
}

void Reclaim::ask(int stage, Stage& s, const QString& node) {
    const qint64 round = m_nextRound++;
    if (!m_sendText(node, protocol::SyncRequest{round, m_settings.partitions, m_settings.chunkValues}))
        return;
    s.asked.insert(node, round);
    qInfo("reclaim: stage %d: asked node %s for its weights", stage, qPrintable(shortId(node)));
}

bool Reclaim::awaitsShare(const QString& node, qint64 round) const {
    return std::any_of(m_stages.cbegin(), m_stages.cend(), [&](const auto& entry) {
        const Stage& s = entry.second;
        return !s.closed && s.asked.value(node, -1) == round;
    });
}

bool Reclaim::onShare(const QString& node, const protocol::AverageShare& share,
                      const protocol::TaskMessage& message) {
    for (auto& [stage, s] : m_stages) {
        const auto it = s.asked.find(node);
        if (s.closed || it == s.asked.end() || it.value() != share.round)
            continue;
        s.asked.erase(it);
        const protocol::TaskFrame* frame = message.frame(protocol::TaskFrameType::Partition);
        Result<std::vector<float>> values = frame != nullptr && share.partition == -1
                                                ? protocol::partitionValues(*frame)
                                                : Result<std::vector<float>>(makeError("not all weights"));
        s.answers[node] = values ? std::move(*values) : std::vector<float>();
        maybeClose(stage);
        return true;
    }
    return false;
}

void Reclaim::nodeGone(const QString& node) {
    for (auto& [stage, s] : m_stages) {
        if (s.closed)
            continue;
        s.held.removeAll(node);
        if (s.asked.remove(node) > 0)
            maybeClose(stage);
    }
}

void Reclaim::tick() {
    for (auto& [stage, s] : m_stages)
        if (s.open && !s.closed)
            maybeClose(stage);
}

void Reclaim::maybeClose(int stage) {
    Stage& s = m_stages[stage];
    if (!s.open || s.closed)
        return;
    const qint64 t = m_clock();
    bool everyExpectedAnswered = true;
    for (auto it = m_expected.cbegin(); it != m_expected.cend(); ++it)
        if (it.value() == stage && s.answers.find(it.key()) == s.answers.end())
            everyExpectedAnswered = false;
    const bool windowOver = t >= s.openedAtMs + m_settings.windowMs && s.asked.isEmpty();
    if (everyExpectedAnswered || windowOver || t >= s.deadlineMs)
        close(stage);
}

void Reclaim::close(int stage) {
    Stage& s = m_stages[stage];
    s.closed = true;
    s.asked.clear();
    ReclaimOutcome outcome;
    if (!s.answers.empty()) {
        const std::vector<float> reference = m_reference(stage);
        std::map<QString, std::vector<float>> answers;
        for (auto& [node, values] : s.answers) {
            if (m_failedAudits(node) > 0) {
                qWarning("reclaim: stage %d: node %s failed an audit before: its weights are not taken",
                         stage, qPrintable(shortId(node)));
                outcome.refused.append(node);
                continue;
            }
            answers.emplace(node, std::move(values));
        }
        ReclaimOutcome chosen = choose(stage, answers, reference, m_stepsSinceCheckpoint(stage), m_settings);
        chosen.refused += outcome.refused;
        outcome = std::move(chosen);
    } else {
        outcome.summary = QStringLiteral("no node sent its weights: the published checkpoint stands");
    }
    outcome.stage = stage;
    outcome.held = s.held;
    s.answers.clear();
    qInfo("reclaim: stage %d: %s", stage, qPrintable(outcome.summary));
    Q_EMIT settled(outcome);
}

ReclaimOutcome Reclaim::choose(int stage, const std::map<QString, std::vector<float>>& answers,
                               const std::vector<float>& reference, qint64 steps,
                               const ReclaimSettings& settings) {
    ReclaimOutcome out;
    out.stage = stage;
    std::vector<Share> candidates;
    double mostUsed = 0;
    for (const auto& [node, values] : answers) {
        double used = 0;
        if (const QString why = refusal(values, reference, steps, settings, used); !why.isEmpty()) {
            qWarning("reclaim: stage %d: node %s's weights are not taken: %s", stage,
                     qPrintable(shortId(node)), qPrintable(why));
            out.refused.append(node);
            continue;
        }
        candidates.push_back(Share{node, values});
        out.candidates.append(node);
        mostUsed = std::max(mostUsed, used);
    }
    if (candidates.empty()) {
        out.summary = QStringLiteral("no weights passed the checks: the published checkpoint stands");
        return out;
    }
    if (candidates.size() == 1) {
        out.values = candidates.front().values;
        out.summary = QStringLiteral("took node %1's weights").arg(shortId(candidates.front().node));
    } else if (candidates.size() == 2) {
        const Share& a = candidates[0];
        const Share& b = candidates[1];
        const double apart = distance(a.values, b.values) / std::max(norm(a.values), 1e-12);
        if (apart <= settings.agreeTolerance) {
            out.values.resize(a.values.size());
            for (std::size_t i = 0; i < a.values.size(); ++i)
                out.values[i] = float(0.5 * (double(a.values[i]) + double(b.values[i])));
            if (a.values == b.values)
                out.values = a.values; // bit for bit: both go on as they are
            out.summary =
                QStringLiteral("took the mean of two replicas that agree (%1 apart)").arg(apart, 0, 'g', 3);
        } else {
            const bool aNearer = distance(a.values, reference) <= distance(b.values, reference);
            const Share& nearer = aNearer ? a : b;
            out.values = nearer.values;
            out.summary = QStringLiteral("two replicas %1 apart: took node %2's, nearer the checkpoint")
                              .arg(apart, 0, 'g', 3)
                              .arg(shortId(nearer.node));
        }
    } else {
        const Combined combined = robustCombine(candidates, reference);
        out.values = combined.values;
        out.summary =
            QStringLiteral("took the robust combination of %1 replicas' weights").arg(combined.used);
    }
    for (const Share& c : candidates)
        if (c.values == out.values)
            out.keep.append(c.node);
    out.summary += QStringLiteral(" (%1 steps since the checkpoint; a weight moved at most %2% of what they "
                                  "could move it)")
                       .arg(steps)
                       .arg(100 * mostUsed, 0, 'f', 1);
    if (!out.refused.isEmpty())
        out.summary += QStringLiteral("; refused %1 node(s)").arg(out.refused.size());
    return out;
}

} // namespace tessera::coordinator
