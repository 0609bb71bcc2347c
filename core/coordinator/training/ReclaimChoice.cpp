// SPDX-License-Identifier: Apache-2.0
// Reclaim's choice: the per-coordinate bound and the choice among a stage's answers, a piece at a
// time (the answers read back from their files, the checkpoint a partition at a time).
#include "coordinator/training/Reclaim.h"

#include "coordinator/trust/RobustCombine.h"
#include "protocol/PartitionChunks.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>

namespace tessera::coordinator {

namespace {

constexpr double kAdamStepBound = 2.0; // κ: a weight's AdamW move per step is at most ~1.17 lr

QString shortId(const QString& node) {
    return node.left(12);
}

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
Status walk(const std::vector<qint64>& partitions,
            const std::function<Result<std::vector<float>>(int partition)>& reference, qint64 piece,
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

} // namespace

ReclaimOutcome Reclaim::choose(int stage, const std::map<QString, Piece>& answers,
                               const std::vector<qint64>& partitions,
                               const std::function<Result<std::vector<float>>(int partition)>& reference,
                               const std::function<Status(int partition, std::span<const float>)>& take,
                               qint64 steps, const ReclaimSettings& settings) {
    ReclaimOutcome out;
    out.stage = stage;
    const qint64 piece = protocol::partitionChunkValues(settings.pieceValues);
    std::vector<Judged> judged;
    for (const auto& [node, read] : answers)
        judged.push_back(Judged{node, read, {}, 0, 0});
    const auto none = [](int) { return Status{}; };
    // Pass 1: every weight within what the steps since the checkpoint could move it.
    const Status bounded = walk(
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
    if (!bounded) {
        out.summary = QStringLiteral("%1: the published checkpoint stands")
                          .arg(QString::fromStdString(bounded.message()));
        return out;
    }
    std::vector<Judged> candidates;
    double mostUsed = 0;
    for (Judged& j : judged) {
        if (!j.refusal.isEmpty()) {
            qWarning("reclaim: stage %d: node %s's weights are not taken: %s", stage,
                     qPrintable(shortId(j.node)), qPrintable(j.refusal));
            out.refused.append(j.node);
            continue;
        }
        out.candidates.append(j.node);
        mostUsed = std::max(mostUsed, j.used);
        candidates.push_back(std::move(j));
    }
    if (candidates.empty()) {
        out.summary = QStringLiteral("no weights passed the checks: the published checkpoint stands");
        return out;
    }
    // Of two: their mean when they agree, else the one nearer the checkpoint.
    enum class Rule {
        One,
        Mean,
        Robust
    } rule = candidates.size() == 1   ? Rule::One
             : candidates.size() == 2 ? Rule::Mean
                                      : Rule::Robust;
    std::size_t one = 0; // Rule::One: whose weights
    if (candidates.size() == 2) {
        double apart2 = 0, norm2 = 0;
        bool bitEqual = true;
        for (qint64 at = 0, total = std::accumulate(partitions.begin(), partitions.end(), qint64(0));
             at < total; at += piece) {
            const qint64 n = std::min(piece, total - at);
            Result<std::vector<float>> a = readPiece(candidates[0].read, at, n);
            Result<std::vector<float>> b = readPiece(candidates[1].read, at, n);
            if (!a || !b) {
                out.summary =
                    QStringLiteral("an answer could not be read back (%1): the published checkpoint stands")
                        .arg(QString::fromStdString(!a ? a.message() : b.message()));
                return out;
            }
            apart2 += squaredDistance(*a, *b);
            for (float x : *a)
                norm2 += double(x) * double(x);
            bitEqual = bitEqual && *a == *b;
        }
        const double apart = std::sqrt(apart2) / std::max(std::sqrt(norm2), 1e-12);
        if (bitEqual) {
            rule = Rule::One; // bit for bit: both go on as they are
            out.summary = QStringLiteral("took the mean of two replicas that agree (0 apart)");
        } else if (apart <= settings.agreeTolerance) {
            out.summary =
                QStringLiteral("took the mean of two replicas that agree (%1 apart)").arg(apart, 0, 'g', 3);
        } else {
            rule = Rule::One;
            one = candidates[0].fromReference <= candidates[1].fromReference ? 0 : 1;
            out.summary = QStringLiteral("two replicas %1 apart: took node %2's, nearer the checkpoint")
                              .arg(apart, 0, 'g', 3)
                              .arg(shortId(candidates[one].node));
        }
    } else if (rule == Rule::One) {
        out.summary = QStringLiteral("took node %1's weights").arg(shortId(candidates.front().node));
    }
    // Pass 2: the choice, a partition at a time into the checkpoint.
    std::vector<bool> same(candidates.size(), true);
    std::vector<float> chosen;
    int used = INT_MAX;
    // Only the robust combination reads the checkpoint again.
    const Status written = walk(
        partitions, rule == Rule::Robust ? reference : nullptr, piece,
        [&](qint64 at, qint64 n, std::span<const float> ref) {
            std::vector<Share> shares;
            for (const Judged& c : candidates) {
                Result<std::vector<float>> v = readPiece(c.read, at, n);
                if (!v)
                    return Status(makeError("node " + shortId(c.node).toStdString() + ": " + v.message()));
                shares.push_back(Share{c.node, std::move(*v)});
            }
            std::vector<float> values;
            if (rule == Rule::One) {
                values = shares[one].values;
            } else if (rule == Rule::Mean) {
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
    if (!written) {
        out.summary = QStringLiteral("the choice could not be written (%1): the published checkpoint stands, "
                                     "less what was written before")
                          .arg(QString::fromStdString(written.message()));
        return out;
    }
    out.took = true;
    if (rule == Rule::Robust)
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
