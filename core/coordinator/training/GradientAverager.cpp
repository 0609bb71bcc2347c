// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/GradientAverager.h"

#include "base/BlockQuant.h"
#include "coordinator/trust/RobustCombine.h"
#include "engine/GradientCombiner.h"

#include <QJsonArray>
#include <QRandomGenerator>

#include <algorithm>
#include <cmath>

namespace tessera::coordinator {

namespace {

// Honest replicas' shares differ by their microbatches' noise (a replica with one microbatch is
// √8 noisier than one with eight); the radius leaves them alone and bounds a liar.
constexpr double kClipFactor = 4.0;
// A share whose norm is this many times both the stage's recent median and the other shares' (lower)
// median is left out of the round (outvoted, not struck): honest shares differ by their microbatches'
// noise (√8 between one microbatch and eight), not by orders of magnitude; a poisoned one (one of two
// replicas setting the mean) does. Both, because honest norms grow tenfold as a model learns (all
// replicas at once: the others agree) — a rule on the history alone once left a stage out for ever.
constexpr double kNormOutlierFactor = 10.0;
constexpr std::size_t kNormWindow = 64, kNormHistory = 8;
// The exchange's rank when the dense one cannot travel: 165× fewer bytes at an 8b middle stage.
constexpr int kFallbackRank = 16;

QString shortId(const QString& node) {
    return node.left(12);
}

} // namespace

GradientAverager::GradientAverager(std::vector<std::unique_ptr<gpu::GradientCombiner>> combiners,
                                   GradientSettings settings, SendText sendText, SendBinary sendBinary,
                                   Clock clock)
    : m_combiners(std::move(combiners))
    , m_settings(settings)
    , m_sendText(std::move(sendText))
    , m_sendBinary(std::move(sendBinary))
    , m_clock(std::move(clock))
    , m_norms(2 * m_combiners.size()) {}

GradientAverager::~GradientAverager() = default;

Result<std::unique_ptr<GradientAverager>> GradientAverager::create(const std::vector<Shapes>& stageShapes,
                                                                   GradientSettings settings,
                                                                   std::uint64_t seed, SendText sendText,
                                                                   SendBinary sendBinary, Clock clock) {
    if (!gpu::validQuantBits(settings.bits))
        return makeError("the gradient exchange travels in 32, 8 or 4 bits, not " +
                         std::to_string(settings.bits));
    if (settings.rank != 0)
        settings.bits = 32; // a low-rank basis must reach every replica exactly
    const auto make = [&](int rank) -> Result<std::vector<std::unique_ptr<gpu::GradientCombiner>>> {
        std::vector<std::unique_ptr<gpu::GradientCombiner>> combiners;
        for (std::size_t s = 0; s < stageShapes.size(); ++s) {
            auto combiner = gpu::GradientCombiner::create(stageShapes[s], rank, seed, settings.bits);
            if (!combiner)
                return makeError("stage " + std::to_string(s) + ": " + combiner.message());
            // Messages are chunked, but each replica's result is still held whole, and sent every step:
            // beyond a message's worth (256 MiB) no home link or coordinator memory keeps up.
            const qint64 bytes = gpu::quantizedBytes((*combiner)->resultSize(), settings.bits);
            if (bytes > protocol::kTaskMessageMaxBytes - protocol::kTaskMessageMaxJsonBytes)
                return makeError("stage " + std::to_string(s) + ": a gradient result of " +
                                 std::to_string(bytes) +
                                 " bytes a replica a step is more than an exchange carries (256 MiB); use a "
                                 "lower --gradient-rank");
            combiners.push_back(std::move(*combiner));
        }
        return combiners;
    };
    auto combiners = make(settings.rank);
    // A dense exchange of stages this large cannot travel (an 8b stage's gradient is gigabytes):
    // the low rank whose bytes fit, rather than no run at all.
    if (!combiners && settings.rank == 0) {
        settings.rank = kFallbackRank;
        settings.bits = 32;
        combiners = make(settings.rank);
        if (combiners)
            qWarning("gradients: the stages' dense gradients are more than an exchange carries; they are "
                     "exchanged at rank %d "
                     "(see --gradient-rank; BENCHMARKS.md shows what that costs in loss)",
                     settings.rank);
    }
    if (!combiners)
        return combiners.error();
    return std::unique_ptr<GradientAverager>(new GradientAverager(
        std::move(*combiners), settings, std::move(sendText), std::move(sendBinary), std::move(clock)));
}

void GradientAverager::start(qint64 step, const std::vector<QStringList>& replicas,
                             const QHash<QString, int>& work) {
    if (m_round)
        close(); // a step ended before the previous exchange did (overlapping steps): close it now
    Round round;
    round.step = step;
    round.work = work;
    round.stages.resize(m_combiners.size());
    for (std::size_t s = 0; s < m_combiners.size(); ++s) {
        round.stages[s].deadlineMs = m_clock() + m_settings.deadlineMs;
        round.stages[s].second = !m_combiners[s]->needsBasis(); // dense: one round
    }
    for (std::size_t s = 0; s < m_combiners.size() && s < replicas.size(); ++s) {
        const protocol::Step request{step, m_combiners[s]->round(), m_combiners[s]->rank(),
                                     m_combiners[s]->bits(), m_settings.chunkValues};
        for (const QString& node : replicas[s])
            if (m_sendText(node, request)) {
                round.stages[s].asked << node;
                round.stages[s].waiting.insert(node);
            }
    }
    m_round = std::move(round);
    maybeClose();
}

bool GradientAverager::awaitsShare(const QString& node, qint64 step) const {
    return m_round && m_round->step == step &&
           std::any_of(m_round->stages.begin(), m_round->stages.end(),
                       [&](const StageRound& s) { return s.waiting.contains(node); });
}

bool GradientAverager::onShare(const QString& node, const protocol::GradientShare& share,
                               const protocol::TaskMessage& message) {
    if (!m_round || share.step != m_round->step)
        return false;
    for (std::size_t s = 0; s < m_round->stages.size(); ++s) {
        StageRound& stage = m_round->stages[s];
        if (!stage.waiting.remove(node))
            continue;
        const bool basisOk = share.basis == m_combiners[s]->round() || !m_combiners[s]->needsBasis();
        if (!basisOk)
            stage.satOut = true;
        // A first share in the second phase (or the other way) does not fit this phase's mean.
        const bool phaseOk = share.firstRound == !stage.second;
        const qint64 size = stage.second ? m_combiners[s]->shareSize() : m_combiners[s]->basisSize();
        if (share.ok && !phaseOk) {
            Q_EMIT shareRefused(
                node, int(s),
                QStringLiteral("its gradient share of step %1 is of the %2 round, not the %3")
                    .arg(share.step)
                    .arg(share.firstRound ? QStringLiteral("first") : QStringLiteral("second"),
                         stage.second ? QStringLiteral("second") : QStringLiteral("first")));
        } else if (share.ok && basisOk && share.microbatches > 0) {
            const protocol::TaskFrame* frame = message.frame(protocol::TaskFrameType::Partition);
            // In the bits the node chose to send (it was asked for the run's; any valid ones decode).
            Result<std::vector<float>> values = frame ? protocol::gradientValues(*frame, share.bits, size)
                                                      : Result<std::vector<float>>(makeError("no values"));
            if (!values || qint64(values->size()) != size) {
                Q_EMIT shareRefused(node, int(s),
                                    QStringLiteral("its gradient share of step %1 is not %2 values: %3")
                                        .arg(share.step)
                                        .arg(size)
                                        .arg(values ? QStringLiteral("%1 came").arg(values->size())
                                                    : QString::fromStdString(values.message())));
            } else {
                // It weighs what the coordinator saw it do, at most (an empty map: its word).
                const int weight = m_round->work.isEmpty()
                                       ? share.microbatches
                                       : std::min(share.microbatches, m_round->work.value(node));
                if (weight > 0)
                    stage.shares.insert(node, Received{std::move(*values), weight, share.microbatches});
            }
        } else if (!share.ok && !share.error.isEmpty()) {
            qInfo("gradients: node %s sits out step %lld: %s", qPrintable(shortId(node)),
                  qlonglong(share.step), qPrintable(share.error));
        }
        maybeClose();
        return true;
    }
    return false;
}

const std::vector<float>* GradientAverager::heldShare(qint64 step, int stage, const QString& node) const {
    if (!m_round || m_round->step != step || stage < 0 || std::size_t(stage) >= m_round->stages.size())
        return nullptr;
    const auto it = m_round->stages[std::size_t(stage)].shares.constFind(node);
    return it == m_round->stages[std::size_t(stage)].shares.constEnd() ? nullptr : &it->values;
}

void GradientAverager::nodeGone(const QString& node) {
    if (!m_round)
        return;
    for (StageRound& stage : m_round->stages) {
        stage.asked.removeAll(node);
        stage.waiting.remove(node);
        stage.shares.remove(node);
    }
    maybeClose();
}

void GradientAverager::tick() {
    if (!m_round)
        return;
    const qint64 now = m_clock();
    for (StageRound& stage : m_round->stages) {
        if (stage.waiting.isEmpty() || now < stage.deadlineMs)
            continue;
        for (const QString& node : std::as_const(stage.waiting)) {
            ++m_sharesMissed;
            qInfo("gradients: node %s missed step %lld's deadline (%s round): dropped from the round",
                  qPrintable(shortId(node)), qlonglong(m_round->step), stage.second ? "second" : "first");
        }
        stage.waiting.clear();
    }
    if (!m_round->judging.isEmpty() && now >= m_round->judgingDeadlineMs) {
        qWarning("gradients: step %lld's share checks did not end within %lld s: its shares count unchecked",
                 qlonglong(m_round->step), qlonglong(m_settings.deadlineMs / 1000));
        m_round->judging.clear();
    }
    maybeClose();
}

void GradientAverager::maybeClose() {
    for (std::size_t s = 0; s < m_round->stages.size(); ++s) {
        StageRound& stage = m_round->stages[s];
        if (stage.waiting.isEmpty() && !stage.second)
            sendBasis(int(s), stage);
    }
    for (const StageRound& stage : m_round->stages)
        if (!stage.waiting.isEmpty() || !stage.second)
            return;
    if (gateShares())
        return;
    close();
}

bool GradientAverager::gateShares() {
    if (m_shareGate && !m_round->gated && m_settings.rank == 0) {
        m_round->gated = true;
        m_round->judgingDeadlineMs = m_clock() + m_settings.deadlineMs;
        for (std::size_t s = 0; s < m_round->stages.size(); ++s) {
            std::vector<ShareView> views;
            for (auto it = m_round->stages[s].shares.cbegin(); it != m_round->stages[s].shares.cend(); ++it)
                views.push_back(ShareView{it.key(), &it->values, it->microbatches, it->claimed});
            if (!views.empty() && m_shareGate(m_round->step, int(s), views))
                m_round->judging.insert(int(s));
        }
    }
    return !m_round->judging.isEmpty();
}

void GradientAverager::sharesJudged(qint64 step, int stage, const QStringList& dropped) {
    if (!m_round || m_round->step != step || !m_round->judging.contains(stage))
        return;
    for (const QString& node : dropped)
        if (m_round->stages[std::size_t(stage)].shares.remove(node) > 0) {
            ++m_sharesFailedCheck;
            qWarning("gradients: node %s's share for stage %d, step %lld failed its check: left out of the round",
                     qPrintable(shortId(node)), stage, qlonglong(step));
        }
    m_round->judging.remove(stage);
    maybeClose();
}

void GradientAverager::sendBasis(int s, StageRound& stage) {
    QSet<QString> counted;
    std::optional<std::vector<float>> mean = combine(s, stage, counted);
    stage.second = true;
    stage.shares.clear();
    stage.deadlineMs = m_clock() + m_settings.deadlineMs;
    if (!mean)
        return; // no result for this stage this step (close() restarts a basis nobody held)
    Result<std::vector<float>> basis = m_combiners[std::size_t(s)]->basis(*mean);
    if (!basis) {
        qWarning("gradients: stage %d, step %lld: %s", s, qlonglong(m_round->step), basis.message().c_str());
        return;
    }
    const std::vector<QByteArray> messages = protocol::partitionMessages(
        protocol::GradientBasis{m_round->step, m_combiners[std::size_t(s)]->round(), 0, 0},
        protocol::gradientPayload(*basis, 32), m_settings.chunkValues);
    for (const QString& node : stage.asked)
        if (counted.contains(node) && sendInOrder(node, messages)) {
            stage.waiting.insert(node);
            ++m_basesSent;
        }
}

void GradientAverager::leaveOutBeyondTraining(int stage, StageRound& round) {
    if (m_settings.rank != 0 || m_settings.maxShareRms <= 0)
        return;
    for (auto it = round.shares.begin(); it != round.shares.end();) {
        double squared = 0;
        for (const float v : it->values)
            squared += double(v) * v;
        const double rms = it->values.empty() ? 0.0 : std::sqrt(squared / double(it->values.size()));
        if (!std::isfinite(rms) || rms <= m_settings.maxShareRms) {
            ++it;
            continue;
        }
        // Left out, not struck: an honest node's share is that large too when a neighbour sent it
        // gradients just under the result checks' bound (a frame: its backward was refused, its
        // weights' gradient kept).
        ++m_sharesBeyond;
        qWarning("gradients: node %s's share for stage %d is far beyond any training (RMS %.3g, over %g a "
                 "weight): "
                 "left out",
                 qPrintable(shortId(it.key())), stage, rms, m_settings.maxShareRms);
        it = round.shares.erase(it);
    }
}

std::optional<std::vector<float>> GradientAverager::combine(int stage, StageRound& round,
                                                            QSet<QString>& counted) {
    leaveOutBeyondTraining(stage, round); // before any median: they count in none
    std::vector<double>& recent = m_norms[2 * std::size_t(stage) + (round.second ? 1 : 0)];
    std::vector<double> sorted = recent;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
    const auto vettedNode = [&](const QString& node) { return !m_trusted || m_trusted(node); };
    QHash<QString, double> norms;
    bool anyVetted = false;
    for (auto it = round.shares.cbegin(); it != round.shares.cend(); ++it) {
        double squared = 0;
        for (const float v : it->values)
            squared += double(v) * v;
        norms.insert(it.key(), std::sqrt(squared));
        anyVetted = anyVetted || vettedNode(it.key());
    }
    // The lower median of the other shares' finite norms (the vetted ones' while any share is vetted):
    // two colluding liars of three replicas do not make each other look ordinary.
    const auto othersMedian = [&](const QString& node) -> std::optional<double> {
        std::vector<double> others;
        for (auto it = norms.cbegin(); it != norms.cend(); ++it)
            if (it.key() != node && std::isfinite(it.value()) && (!anyVetted || vettedNode(it.key())))
                others.push_back(it.value());
        if (others.empty())
            return std::nullopt;
        std::sort(others.begin(), others.end());
        return others[(others.size() - 1) / 2];
    };
    std::vector<Share> vetted, all;
    for (auto it = round.shares.begin(); it != round.shares.end(); ++it) {
        const double norm = norms.value(it.key());
        const std::optional<double> others = othersMedian(it.key());
        // A lone share has nothing to be outvoted by: the global clip bounds it.
        if (recent.size() >= kNormHistory && others && std::isfinite(norm) &&
            norm > kNormOutlierFactor * std::max(median, *others)) {
            ++m_sharesOutvoted;
            qWarning("gradients: node %s's share for stage %d has norm %.3g, %.0fx the stage's recent "
                     "median and %.0fx the other replicas': left out of the round",
                     qPrintable(shortId(it.key())), stage, norm, norm / std::max(median, 1e-30),
                     norm / std::max(*others, 1e-30));
            continue;
        }
        if (std::isfinite(norm) && vettedNode(it.key())) {
            recent.push_back(norm);
            if (recent.size() > kNormWindow)
                recent.erase(recent.begin());
        }
        Share share{it.key(), std::move(it->values), double(it->microbatches)};
        if (vettedNode(share.node))
            vetted.push_back(share);
        all.push_back(std::move(share));
    }
    // Shares of nodes on probation do not count while any vetted replica's does.
    const std::vector<Share>& used = vetted.empty() ? all : vetted;
    if (used.empty())
        return std::nullopt;
    RobustCombineSettings settings;
    settings.meanOfClipped = true;
    settings.clipFactor = kClipFactor;
    Combined combined = robustCombine(used, {}, settings);
    for (const QString& node : combined.dropped)
        Q_EMIT shareRefused(node, stage, QStringLiteral("its gradient share is not finite"));
    m_sharesClipped += combined.clipped.size();
    for (const QString& node : combined.clipped)
        qInfo("gradients: node %s's share for stage %d was far from the others' (clipped)",
              qPrintable(shortId(node)), stage);
    if (combined.used == 0)
        return std::nullopt;
    for (const Share& share : used)
        if (!combined.dropped.contains(share.node))
            counted.insert(share.node);
    if (round.second)
        m_sharesCounted += counted.size();
    return std::move(combined.values);
}

void GradientAverager::close() {
    Round round = std::move(*m_round);
    m_round.reset();
    const std::size_t stages = round.stages.size();
    std::vector<std::vector<float>> results(stages);
    std::vector<QSet<QString>> counted(stages);
    double squared = 0;
    for (std::size_t s = 0; s < stages; ++s) {
        // A stage still in its first phase (the next step began first) makes no result.
        std::optional<std::vector<float>> mean =
            round.stages[s].second ? combine(int(s), round.stages[s], counted[s]) : std::nullopt;
        if (!mean) {
            // Its replicas all hold another round's basis (they joined since): everyone starts over
            // from the seeded one at the next step rather than sit out for ever.
            if (round.stages[s].satOut && round.stages[s].second) {
                qInfo("gradients: stage %d: no replica holds round %lld's basis; the next round starts from "
                      "the "
                      "seeded one",
                      int(s), qlonglong(m_combiners[s]->round()));
                m_combiners[s]->reset();
            }
            continue;
        }
        double norm = 0;
        Result<std::vector<float>> result = m_combiners[s]->result(*mean, &norm);
        if (!result) {
            qWarning("gradients: stage %d, step %lld: %s", int(s), qlonglong(round.step),
                     result.message().c_str());
            continue;
        }
        results[s] = std::move(*result);
        squared += norm;
    }
    m_lastNorm = std::sqrt(squared);
    m_lastClipScale =
        m_settings.clipNorm > 0 && m_lastNorm > m_settings.clipNorm ? m_settings.clipNorm / m_lastNorm : 1.0;
    m_lastLearningRate = m_settings.schedule.at(round.step);
    m_lastStep = round.step;
    for (std::size_t s = 0; s < stages; ++s) {
        if (results[s].empty())
            continue;
        // The combiner rounded the result as this encodes it: every replica decodes what it applies.
        const QByteArray payload = protocol::gradientPayload(results[s], m_combiners[s]->bits());
        QStringList recipients = round.stages[s].asked;
        if (m_observers)
            for (const QString& node : m_observers(int(s)))
                if (!recipients.contains(node))
                    recipients << node;
        // Drawn now, after the step: the fingerprint of weights nobody could hold before this result.
        const qint64 seed =
            m_fingerprinted ? qint64(QRandomGenerator::system()->generate64() % kMaxSeed) + 1 : 0;
        QStringList fingerprinted;
        for (const QString& node : recipients) {
            const bool asked = seed != 0 && m_fingerprinted(node, int(s));
            if (asked)
                fingerprinted << node;
            const protocol::GradientResult header{round.step,
                                                  m_combiners[s]->round(),
                                                  counted[s].contains(node),
                                                  int(counted[s].size()),
                                                  m_lastLearningRate,
                                                  m_lastClipScale,
                                                  m_settings.lookAhead,
                                                  m_combiners[s]->bits(),
                                                  qint64(results[s].size()),
                                                  0,
                                                  0,
                                                  asked ? seed : 0};
            if (sendInOrder(node, protocol::partitionMessages(header, payload, m_settings.chunkValues)))
                Q_EMIT weightsSent(node);
        }
        Q_EMIT applied(Applied{int(s), round.step, m_combiners[s]->round(), m_lastLearningRate,
                               m_lastClipScale, quint64(seed), fingerprinted},
                       results[s]);
    }
    ++m_rounds;
    Q_EMIT closed(round.step);
}

QJsonObject GradientAverager::status() const {
    QJsonArray bytes;
    for (const auto& c : m_combiners)
        bytes.append(QJsonObject{
            // Per replica and step, both rounds: up (first and second share), down (basis and result).
            {QStringLiteral("share_bytes"),
             qint64(c->basisSize() * 4 + gpu::quantizedBytes(c->shareSize(), c->bits()))},
            {QStringLiteral("result_bytes"),
             qint64(c->basisSize() * 4 + gpu::quantizedBytes(c->resultSize(), c->bits()))},
            {QStringLiteral("fp32_gradient_bytes"), c->gradientSize() * qint64(sizeof(float))}});
    const gpu::LearningRateSchedule& s = m_settings.schedule;
    return QJsonObject{
        {QStringLiteral("enabled"), m_settings.enabled},
        {QStringLiteral("rank"), m_settings.rank},
        {QStringLiteral("bits"), m_combiners.empty() ? m_settings.bits : m_combiners.front()->bits()},
        {QStringLiteral("clip_norm"), m_settings.clipNorm},
        {QStringLiteral("learning_rate"), m_lastLearningRate},
        {QStringLiteral("schedule"), QJsonObject{{QStringLiteral("peak"), s.peak},
                                                 {QStringLiteral("warmup_steps"), qint64(s.warmupSteps)},
                                                 {QStringLiteral("decay"), QLatin1String(s.decayName())},
                                                 {QStringLiteral("decay_steps"), qint64(s.decaySteps)},
                                                 {QStringLiteral("min_ratio"), s.minRatio}}},
        {QStringLiteral("rounds"), m_rounds},
        {QStringLiteral("bases_sent"), m_basesSent},
        {QStringLiteral("last_step"), m_lastStep},
        {QStringLiteral("gradient_norm"), m_lastNorm},
        {QStringLiteral("clip_scale"), m_lastClipScale},
        {QStringLiteral("shares_counted"), m_sharesCounted},
        {QStringLiteral("shares_missed"), m_sharesMissed},
        {QStringLiteral("shares_clipped"), m_sharesClipped},
        {QStringLiteral("shares_outvoted"), m_sharesOutvoted},
        {QStringLiteral("shares_beyond_training"), m_sharesBeyond},
        {QStringLiteral("shares_failed_check"), m_sharesFailedCheck},
        {QStringLiteral("look_ahead"), m_settings.lookAhead},
        {QStringLiteral("stages"), bytes},
    };
}

} // namespace tessera::coordinator
