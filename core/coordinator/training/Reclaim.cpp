// SPDX-License-Identifier: Apache-2.0
// Reclaim: a restarted coordinator takes each stage's current weights back from its nodes, checked —
// and its choice: the per-coordinate bound and the choice among a stage's answers, a piece at a time
// (the answers read back from their files, the checkpoint a partition at a time).
#include "coordinator/training/Reclaim.h"

#include "coordinator/trust/RobustCombine.h"
#include "protocol/PartitionChunks.h"

#include <QDir>
#include <QTemporaryFile>

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <optional>

namespace tessera::coordinator {

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

} // namespace

Reclaim::Reclaim(ReclaimSettings settings, ReclaimCheckpoint checkpoint, FailedAudits failedAudits,
                 SendText sendText, Clock clock)
    : m_settings(std::move(settings))
    , m_checkpoint(std::move(checkpoint))
    , m_failedAudits(std::move(failedAudits))
    , m_sendText(std::move(sendText))
    , m_clock(std::move(clock)) {}

Reclaim::~Reclaim() = default;

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
        const std::vector<qint64> partitions = m_checkpoint.partitions(stage);
        s.values = std::accumulate(partitions.begin(), partitions.end(), qint64(0));
        if (s.values <= 0) {
            qWarning("reclaim: stage %d: its checkpoint is not readable: it stands as published", stage);
            s.closed = true;
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
        takeChunk(stage, s, node, share, message);
        maybeClose(stage);
        return true;
    }
    return false;
}

void Reclaim::takeChunk(int stage, Stage& s, const QString& node, const protocol::AverageShare& share,
                        const protocol::TaskMessage& message) {
    Answer& a = s.answers[node];
    const auto refuse = [&](const QString& why) {
        qWarning("reclaim: stage %d: node %s's weights are not taken: %s", stage, qPrintable(shortId(node)),
                 qPrintable(why));
        a.error = why;
        a.file.reset();
        s.asked.remove(node);
    };
    const protocol::TaskFrame* frame = message.frame(protocol::TaskFrameType::Partition);
    if (share.partition != -1 || frame == nullptr)
        return refuse(QStringLiteral("not all weights"));
    if (frame->payload.size() % qsizetype(sizeof(float)) != 0)
        return refuse(
            QStringLiteral("a partition of %1 bytes, not whole fp32 values").arg(frame->payload.size()));
    const qint64 n = frame->payload.size() / qsizetype(sizeof(float));
    const qint64 total = share.total > 0 ? share.total : n;
    const qint64 offset = share.total > 0 ? share.offset : 0;
    if (total != s.values)
        return refuse(QStringLiteral("%1 values, the stage has %2").arg(total).arg(s.values));
    if (offset != a.received)
        return refuse(QStringLiteral("a chunk at value %1 after %2 values").arg(offset).arg(a.received));
    if (offset + n > total)
        return refuse(QStringLiteral("values past the %1 it announced").arg(total));
    if (!a.file) {
        const QString dir = m_settings.spillDir.isEmpty() ? QDir::tempPath() : m_settings.spillDir;
        QDir().mkpath(dir);
        a.file = std::make_unique<QTemporaryFile>(
            QDir(dir).filePath(QStringLiteral("reclaim-stage-%1-XXXXXX").arg(stage)));
        if (!a.file->open())
            return refuse(
                QStringLiteral("its answer cannot be written in %1: %2").arg(dir, a.file->errorString()));
    }
    if (a.file->write(frame->payload.data(), frame->payload.size()) != frame->payload.size())
        return refuse(QStringLiteral("its answer could not be written: %1").arg(a.file->errorString()));
    a.received += n;
    // An answer under way keeps the stage open: a deadline from its last chunk, within the longest.
    s.deadlineMs = std::min(std::max(s.deadlineMs, m_clock() + m_settings.deadlineMs),
                            s.openedAtMs + std::max(m_settings.longestMs, m_settings.deadlineMs));
    if (a.received == total) {
        a.complete = a.file->flush();
        if (!a.complete)
            return refuse(QStringLiteral("its answer could not be written: %1").arg(a.file->errorString()));
        s.asked.remove(node);
    }
}

void Reclaim::nodeGone(const QString& node) {
    for (auto& [stage, s] : m_stages) {
        if (s.closed)
            continue;
        s.held.removeAll(node);
        if (s.asked.remove(node) > 0) {
            s.answers.erase(node); // what came of it is not all of its weights
            maybeClose(stage);
        }
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
    for (auto it = m_expected.cbegin(); it != m_expected.cend(); ++it) {
        const auto answer = s.answers.find(it.key());
        if (it.value() == stage &&
            (answer == s.answers.end() || (!answer->second.complete && answer->second.error.isEmpty())))
            everyExpectedAnswered = false;
    }
    const bool windowOver = t >= s.openedAtMs + m_settings.windowMs && s.asked.isEmpty();
    if (everyExpectedAnswered || windowOver || t >= s.deadlineMs)
        close(stage);
}

void Reclaim::close(int stage) {
    Stage& s = m_stages[stage];
    s.closed = true;
    s.asked.clear();
    QStringList refused;
    std::map<QString, Piece> answers;
    for (auto& [node, a] : s.answers) {
        if (!a.error.isEmpty()) {
            refused.append(node);
            continue;
        }
        if (!a.complete) {
            qWarning(
                "reclaim: stage %d: node %s's answer was not complete when the stage closed (%lld of %lld "
                "values)",
                stage, qPrintable(shortId(node)), qlonglong(a.received), qlonglong(s.values));
            continue;
        }
        if (m_failedAudits(node) > 0) {
            qWarning("reclaim: stage %d: node %s failed an audit before: its weights are not taken", stage,
                     qPrintable(shortId(node)));
            refused.append(node);
            continue;
        }
        QTemporaryFile* file = a.file.get();
        answers.emplace(node, [file](qint64 offset, qint64 count) -> Result<std::vector<float>> {
            std::vector<float> v(static_cast<std::size_t>(count));
            const qint64 bytes = count * qint64(sizeof(float));
            if (!file->seek(offset * qint64(sizeof(float))) ||
                file->read(reinterpret_cast<char*>(v.data()), bytes) != bytes)
                return makeError("its answer could not be read back: " + file->errorString().toStdString());
            return v;
        });
    }
    ReclaimOutcome outcome;
    if (!answers.empty()) {
        outcome = choose(
            stage, answers, m_checkpoint.partitions(stage),
            [&](int partition) { return m_checkpoint.values(stage, partition); },
            [&](int partition, std::span<const float> values) {
                return m_checkpoint.take(stage, partition, values);
            },
            m_checkpoint.stepsSince(stage), m_settings);
    } else {
        outcome.summary =
            refused.isEmpty()
                ? QStringLiteral("no node sent its weights: the published checkpoint stands")
                : QStringLiteral("no weights passed the checks: the published checkpoint stands");
    }
    outcome.refused += refused;
    outcome.stage = stage;
    outcome.held = s.held;
    s.answers.clear(); // and their files
    qInfo("reclaim: stage %d: %s", stage, qPrintable(outcome.summary));
    Q_EMIT settled(outcome);
}

// Reclaim::choose: the per-coordinate bound, and the choice among the answers that keep within it.

namespace {

constexpr double kAdamStepBound = 2.0; // κ: a weight's AdamW move per step is at most ~1.17 lr

using Reference = Reclaim::Reference;
using Take = Reclaim::Take;

double squaredDistance(std::span<const float> a, std::span<const float> b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = double(a[i]) - double(b[i]);
        sum += d * d;
    }
    return sum;
}

// Why `answer` (the stage's values from index `at` on) cannot be the stage's weights trained on from
// `reference` for `steps` steps, or empty when it can; `used`: the largest share of its bound a weight
// moved so far.
QString refusal(std::span<const float> answer, std::span<const float> reference, qint64 at, qint64 steps,
                const ReclaimSettings& settings, double& used) {
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
                .arg(at + qint64(i))
                .arg(moved, 0, 'g', 3)
                .arg(qint64(k))
                .arg(bound, 0, 'g', 3);
        used = std::max(used, moved / bound);
    }
    return {};
}

// The stage a piece at a time: each partition's checkpoint values read once (unless `reference` is
// empty: every piece's reference is then empty too), then `onPiece(at, n, reference)` for every piece
// of at most `piece` values within it (`at`: the piece's index in the answer), and
// `onPartition(partition)` after its last piece. An error stops the walk.
template <class OnPiece, class OnPartition>
Status walk(const std::vector<qint64>& partitions, const Reference& reference, qint64 piece,
            OnPiece&& onPiece, OnPartition&& onPartition) {
    qint64 at = 0;
    for (std::size_t p = 0; p < partitions.size(); ++p) {
        Result<std::vector<float>> values = reference ? reference(int(p)) : std::vector<float>();
        if (!values)
            return makeError("the checkpoint's partition " + std::to_string(p) + ": " + values.message());
        if (reference && qint64(values->size()) != partitions[p])
            return makeError("the checkpoint's partition " + std::to_string(p) + " has " +
                             std::to_string(values->size()) + " values, not " +
                             std::to_string(partitions[p]));
        for (qint64 offset = 0; offset < partitions[p]; offset += piece) {
            const qint64 n = std::min(piece, partitions[p] - offset);
            const std::span<const float> ref =
                reference ? std::span<const float>(values->data() + offset, std::size_t(n))
                          : std::span<const float>();
            if (Status s = onPiece(at + offset, n, ref); !s)
                return s;
        }
        if (Status s = onPartition(int(p)); !s)
            return s;
        at += partitions[p];
    }
    return {};
}

// One answer as it is judged.
struct Judged {
    QString node;
    Reclaim::Piece read;
    QString refusal;
    double used = 0;
    double fromReference = 0; // squared distance from the checkpoint
};

// An answer's piece, or the reason it cannot be read as one.
Result<std::vector<float>> readPiece(const Reclaim::Piece& read, qint64 at, qint64 n) {
    Result<std::vector<float>> v = read(at, n);
    if (v && qint64(v->size()) != n)
        return makeError("its answer ended at value " + std::to_string(at + qint64(v->size())));
    return v;
}

// Pass 1: every weight within what the steps since the checkpoint could move it. Each answer's
// refusal (if any), the largest share of its bound a weight used and its distance from the
// checkpoint; an error when the checkpoint could not be read.
Status judge(std::vector<Judged>& judged, const std::vector<qint64>& partitions, const Reference& reference,
             qint64 piece, qint64 steps, const ReclaimSettings& settings) {
    const auto none = [](int) { return Status{}; };
    return walk(
        partitions, reference, piece,
        [&](qint64 at, qint64 n, std::span<const float> ref) {
            for (Judged& j : judged) {
                if (!j.refusal.isEmpty())
                    continue;
                Result<std::vector<float>> v = readPiece(j.read, at, n);
                if (!v) {
                    j.refusal = QString::fromStdString(v.message());
                    continue;
                }
                j.refusal = refusal(*v, ref, at, steps, settings, j.used);
                j.fromReference += squaredDistance(*v, ref);
            }
            return Status{};
        },
        none);
}

// The answers that passed, named in out.candidates; those that did not, logged and named in
// out.refused. `mostUsed`: the largest share of its bound a candidate's weight used.
std::vector<Judged> candidatesOf(std::vector<Judged>& judged, ReclaimOutcome& out, double& mostUsed) {
    std::vector<Judged> candidates;
    for (Judged& j : judged) {
        if (!j.refusal.isEmpty()) {
            qWarning("reclaim: stage %d: node %s's weights are not taken: %s", out.stage,
                     qPrintable(shortId(j.node)), qPrintable(j.refusal));
            out.refused.append(j.node);
            continue;
        }
        out.candidates.append(j.node);
        mostUsed = std::max(mostUsed, j.used);
        candidates.push_back(std::move(j));
    }
    return candidates;
}

// How the candidates make the choice: one's weights as they are, the mean of two, or the robust
// combination of three or more.
enum class Rule { One, Mean, Robust };
struct Choice {
    Rule rule = Rule::One;
    std::size_t one = 0; // Rule::One: whose weights
};

// Of two: their mean when they agree, else the one nearer the checkpoint. The summary says which;
// nullopt when an answer could not be read back (the summary says so).
std::optional<Choice> chooseOfTwo(const std::vector<Judged>& candidates,
                                  const std::vector<qint64>& partitions, qint64 piece,
                                  const ReclaimSettings& settings, ReclaimOutcome& out) {
    double apart2 = 0, norm2 = 0;
    bool bitEqual = true;
    for (qint64 at = 0, total = std::accumulate(partitions.begin(), partitions.end(), qint64(0)); at < total;
         at += piece) {
        const qint64 n = std::min(piece, total - at);
        Result<std::vector<float>> a = readPiece(candidates[0].read, at, n);
        Result<std::vector<float>> b = readPiece(candidates[1].read, at, n);
        if (!a || !b) {
            out.summary =
                QStringLiteral("an answer could not be read back (%1): the published checkpoint stands")
                    .arg(QString::fromStdString(!a ? a.message() : b.message()));
            return std::nullopt;
        }
        apart2 += squaredDistance(*a, *b);
        for (float x : *a)
            norm2 += double(x) * double(x);
        bitEqual = bitEqual && *a == *b;
    }
    const double apart = std::sqrt(apart2) / std::max(std::sqrt(norm2), 1e-12);
    if (bitEqual) {
        out.summary = QStringLiteral("took the mean of two replicas that agree (0 apart)");
        return Choice{Rule::One, 0}; // bit for bit: both go on as they are
    }
    if (apart <= settings.agreeTolerance) {
        out.summary =
            QStringLiteral("took the mean of two replicas that agree (%1 apart)").arg(apart, 0, 'g', 3);
        return Choice{Rule::Mean, 0};
    }
    const std::size_t one = candidates[0].fromReference <= candidates[1].fromReference ? 0 : 1;
    out.summary = QStringLiteral("two replicas %1 apart: took node %2's, nearer the checkpoint")
                      .arg(apart, 0, 'g', 3)
                      .arg(shortId(candidates[one].node));
    return Choice{Rule::One, one};
}

// Pass 2: the choice, a partition at a time into the checkpoint. `same[c]`: candidate c's weights are
// the choice bit for bit; `used`: the fewest replicas a piece's robust combination used.
Status writeChoice(const std::vector<Judged>& candidates, Choice choice,
                   const std::vector<qint64>& partitions, const Reference& reference, const Take& take,
                   qint64 piece, std::vector<bool>& same, int& used) {
    std::vector<float> chosen;
    // Only the robust combination reads the checkpoint again.
    return walk(
        partitions, choice.rule == Rule::Robust ? reference : nullptr, piece,
        [&](qint64 at, qint64 n, std::span<const float> ref) {
            std::vector<Share> shares;
            for (const Judged& c : candidates) {
                Result<std::vector<float>> v = readPiece(c.read, at, n);
                if (!v)
                    return Status(makeError("node " + shortId(c.node).toStdString() + ": " + v.message()));
                shares.push_back(Share{c.node, std::move(*v)});
            }
            std::vector<float> values;
            if (choice.rule == Rule::One) {
                values = shares[choice.one].values;
            } else if (choice.rule == Rule::Mean) {
                values.resize(std::size_t(n));
                for (std::size_t i = 0; i < values.size(); ++i)
                    values[i] = float(0.5 * (double(shares[0].values[i]) + double(shares[1].values[i])));
            } else {
                Combined combined = robustCombine(shares, ref);
                used = std::min(used, combined.used);
                values = std::move(combined.values);
            }
            for (std::size_t c = 0; c < shares.size(); ++c)
                same[c] = same[c] && shares[c].values == values;
            chosen.insert(chosen.end(), values.begin(), values.end());
            return Status{};
        },
        [&](int partition) {
            Status s = take(partition, chosen);
            chosen.clear();
            return s;
        });
}

} // namespace

ReclaimOutcome Reclaim::choose(int stage, const std::map<QString, Piece>& answers,
                               const std::vector<qint64>& partitions, const Reference& reference,
                               const Take& take, qint64 steps, const ReclaimSettings& settings) {
    ReclaimOutcome out;
    out.stage = stage;
    const qint64 piece = protocol::partitionChunkValues(settings.pieceValues);
    std::vector<Judged> judged;
    for (const auto& [node, read] : answers)
        judged.push_back(Judged{node, read, {}, 0, 0});
    if (const Status bounded = judge(judged, partitions, reference, piece, steps, settings); !bounded) {
        out.summary = QStringLiteral("%1: the published checkpoint stands")
                          .arg(QString::fromStdString(bounded.message()));
        return out;
    }
    double mostUsed = 0;
    const std::vector<Judged> candidates = candidatesOf(judged, out, mostUsed);
    if (candidates.empty()) {
        out.summary = QStringLiteral("no weights passed the checks: the published checkpoint stands");
        return out;
    }
    std::optional<Choice> choice = Choice{candidates.size() == 1 ? Rule::One : Rule::Robust, 0};
    if (candidates.size() == 2)
        choice = chooseOfTwo(candidates, partitions, piece, settings, out);
    else if (choice->rule == Rule::One)
        out.summary = QStringLiteral("took node %1's weights").arg(shortId(candidates.front().node));
    if (!choice)
        return out;
    std::vector<bool> same(candidates.size(), true);
    int used = INT_MAX;
    if (const Status written =
            writeChoice(candidates, *choice, partitions, reference, take, piece, same, used);
        !written) {
        out.summary = QStringLiteral("the choice could not be written (%1): the published checkpoint stands, "
                                     "less what was written before")
                          .arg(QString::fromStdString(written.message()));
        return out;
    }
    out.took = true;
    if (choice->rule == Rule::Robust)
        out.summary = QStringLiteral("took the robust combination of %1 replicas' weights").arg(used);
    for (std::size_t c = 0; c < candidates.size(); ++c)
        if (same[c])
            out.keep.append(candidates[c].node);
    out.summary += QStringLiteral(" (%1 steps since the checkpoint; a weight moved at most %2% of what they "
                                  "could move it)")
                       .arg(steps)
                       .arg(100 * mostUsed, 0, 'f', 1);
    if (!out.refused.isEmpty())
        out.summary += QStringLiteral("; refused %1 node(s)").arg(out.refused.size());
    return out;
}

ReclaimOutcome Reclaim::choose(int stage, const std::map<QString, std::vector<float>>& answers,
                               const std::vector<float>& reference, qint64 steps,
                               const ReclaimSettings& settings) {
    std::map<QString, Piece> pieces;
    QStringList wrongSize;
    for (const auto& [node, values] : answers) {
        if (values.size() != reference.size()) {
            qWarning("reclaim: stage %d: node %s's weights are not taken: %zu values, the stage has %zu",
                     stage, qPrintable(shortId(node)), values.size(), reference.size());
            wrongSize.append(node);
            continue;
        }
        const std::vector<float>* v = &values;
        pieces.emplace(node, [v](qint64 offset, qint64 count) -> Result<std::vector<float>> {
            return std::vector<float>(v->begin() + offset, v->begin() + offset + count);
        });
    }
    std::vector<float> chosen;
    ReclaimOutcome out = choose(
        stage, pieces, {qint64(reference.size())}, [&](int) { return Result<std::vector<float>>(reference); },
        [&](int, std::span<const float> values) {
            chosen.insert(chosen.end(), values.begin(), values.end());
            return Status{};
        },
        steps, settings);
    out.refused += wrongSize;
    if (out.took)
        out.values = std::move(chosen);
    return out;
}

} // namespace tessera::coordinator
