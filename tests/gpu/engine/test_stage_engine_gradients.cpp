// SPDX-License-Identifier: Apache-2.0
// Gradient averaging through the engine facade: two replicas of each stage train different
// microbatches, share, take the combiner's result and step — and hold the same weights afterwards,
// bit for bit (dense) or as equal as their identical updates make them (low rank), equal to one
// engine that trained every microbatch itself (dense); a replica left out of a round keeps its
// gradient for the next; bad input changes nothing.
#include "StageEngineTestSupport.h"
#include "engine/GradientCombiner.h"

using namespace tessera::test;

namespace {

// `count` replicas of each of the two stages: first[r], last[r].
struct Replicas {
    std::vector<std::unique_ptr<StageEngine>> first, last;
    Replicas(const ModelConfig& config, int count) {
        for (int r = 0; r < count; ++r) {
            first.push_back(engine(config, 0));
            last.push_back(engine(config, 1));
        }
    }
};

// One exchange for one stage over its replicas (at a low rank, PowerSGD's two rounds); every
// replica applies the result.
void exchange(std::vector<std::unique_ptr<StageEngine>>& replicas, GradientCombiner& combiner, int rank,
              double lr = 1e-3) {
    std::vector<bool> included;
    std::vector<int> weights;
    std::vector<std::vector<float>> shares;
    int total = 0;
    for (auto& r : replicas) {
        auto share = r->shareGradients(rank, combiner.round());
        CHECK_MSG(share.ok(), share.message());
        CHECK(share->firstRound == combiner.needsBasis());
        included.push_back(!share->values.empty());
        weights.push_back(share->values.empty() ? 0 : share->microbatches);
        total += weights.back();
        shares.push_back(std::move(share->values));
    }
    CHECK(total > 0);
    const auto mean = [&](std::int64_t size) {
        std::vector<double> sum(static_cast<std::size_t>(size), 0.0);
        for (std::size_t r = 0; r < shares.size(); ++r)
            for (std::size_t i = 0; i < shares[r].size(); ++i)
                sum[i] += weights[r] * double(shares[r][i]);
        std::vector<float> out(sum.size());
        for (std::size_t i = 0; i < sum.size(); ++i)
            out[i] = float(sum[i] / total);
        return out;
    };
    if (combiner.needsBasis()) {
        auto basis = combiner.basis(mean(combiner.basisSize()));
        CHECK_MSG(basis.ok(), basis.message());
        for (std::size_t r = 0; r < replicas.size(); ++r)
            if (included[r]) {
                auto second = replicas[r]->shareOnBasis(rank, *basis);
                CHECK_MSG(second.ok(), second.message());
                shares[r] = std::move(second).value();
                // One second share per first: the basis again makes none.
                CHECK(!replicas[r]->shareOnBasis(rank, *basis).ok());
            }
    }
    double norm = 0;
    auto result = combiner.result(mean(combiner.shareSize()), &norm);
    CHECK_MSG(result.ok(), result.message());
    for (std::size_t r = 0; r < replicas.size(); ++r) {
        const tessera::Status applied =
            replicas[r]->applyGradients(rank, *result, included[r], combiner.round(), lr, 1.0);
        CHECK_MSG(applied.ok(), applied.message());
    }
}

double worstAcross(StageEngine& a, StageEngine& b, const fs::path& dir) {
    auto wa = weightsOf(a, dir / "a");
    auto wb = weightsOf(b, dir / "b");
    double worst = 0;
    for (const auto& [name, t] : wa)
        worst = std::max(worst, (t - wb.at(name)).abs().max().item<double>());
    return worst;
}

} // namespace

TESSERA_TEST(denseAveragingKeepsReplicasEqualAndEqualToOneMachine) {
    TempDir dir;
    fs::create_directories(dir.path / "a");
    fs::create_directories(dir.path / "b");
    const ModelConfig config = twoStages();
    Replicas swarm(config, 2), solo(config, 1); // solo: one machine, its own one-replica rounds
    const auto combiner = [&](StageEngine& e) {
        return GradientCombiner::create(e.parameterShapes(), 0, config.seed).value();
    };
    auto c0 = combiner(*swarm.first[0]), c1 = combiner(*swarm.last[0]);
    auto s0 = combiner(*solo.first[0]), s1 = combiner(*solo.last[0]);
    std::int64_t id = 0;
    for (int step = 1; step <= 3; ++step) {
        // Replica 0 trains one microbatch, replica 1 two: the mean weighs them 1:2.
        for (int m = 0; m < 3; ++m) {
            const Batch b = makeBatch(std::uint64_t(step * 10 + m));
            const int r = m == 0 ? 0 : 1;
            trainMicrobatch(*swarm.first[r], *swarm.last[r], id, b);
            trainMicrobatch(*solo.first[0], *solo.last[0], id + 1000, b);
            ++id;
        }
        exchange(swarm.first, *c0, 0);
        exchange(swarm.last, *c1, 0);
        exchange(solo.first, *s0, 0);
        exchange(solo.last, *s1, 0);
    }
    CHECK_MSG(worstAcross(*swarm.first[0], *swarm.first[1], dir.path) == 0, "stage 0 replicas differ");
    CHECK_MSG(worstAcross(*swarm.last[0], *swarm.last[1], dir.path) == 0, "stage 1 replicas differ");
    const double vsSolo = worstAcross(*swarm.first[0], *solo.first[0], dir.path);
    CHECK_MSG(vsSolo < 1e-6, "the swarm's stage 0 differs from one machine's by " << vsSolo);
}

TESSERA_TEST(lowRankUpdatesAreTheSameOnEveryReplica) {
    TempDir dir;
    fs::create_directories(dir.path / "a");
    fs::create_directories(dir.path / "b");
    const ModelConfig config = twoStages();
    Replicas swarm(config, 2);
    auto c0 = GradientCombiner::create(swarm.first[0]->parameterShapes(), 4, config.seed).value();
    auto c1 = GradientCombiner::create(swarm.last[0]->parameterShapes(), 4, config.seed).value();
    CHECK(c0->needsBasis() && (c0->basisSize() + c0->shareSize()) * 5 < c0->gradientSize());
    std::int64_t id = 0;
    for (int step = 1; step <= 3; ++step) {
        for (int r = 0; r < 2; ++r)
            trainMicrobatch(*swarm.first[r], *swarm.last[r], id++, makeBatch(std::uint64_t(step * 10 + r)));
        exchange(swarm.first, *c0, 4);
        exchange(swarm.last, *c1, 4);
    }
    CHECK_MSG(worstAcross(*swarm.first[0], *swarm.first[1], dir.path) == 0, "stage 0 replicas differ");
    CHECK_MSG(worstAcross(*swarm.last[0], *swarm.last[1], dir.path) == 0, "stage 1 replicas differ");
    CHECK(c0->round() == 3);
}

TESSERA_TEST(aReplicaOnAnotherBasisSitsOutAndBadResultsChangeNothing) {
    TempDir dir;
    const ModelConfig config = twoStages();
    auto e = engine(config, 0);
    auto last = engine(config, 1);
    trainMicrobatch(*e, *last, 1, makeBatch(1));
    auto share = e->shareGradients(4, 7); // the combiner is at round 7; this replica holds round 0
    CHECK_MSG(share.ok(), share.message());
    CHECK(!share->hasBasis && share->values.empty() && share->microbatches == 1);
    const std::string before = shardHash(*e, dir.path);
    auto combiner = GradientCombiner::create(e->parameterShapes(), 4, config.seed).value();
    // No first share was made on a basis it holds: a basis finds nothing to build a second on.
    CHECK(!e->shareOnBasis(4, std::vector<float>(std::size_t(combiner->basisSize()), 0.1f)).ok());
    std::vector<float> wrong(static_cast<std::size_t>(combiner->resultSize() - 1), 0.0f);
    CHECK(!e->applyGradients(4, wrong, false, 1, 1e-3, 1.0).ok());
    std::vector<float> nan(static_cast<std::size_t>(combiner->resultSize()), 0.0f);
    nan[5] = std::nanf("");
    CHECK(!e->applyGradients(4, nan, false, 1, 1e-3, 1.0).ok());
    CHECK(!e->applyGradients(4, std::vector<float>(nan.size(), 0.0f), false, 1, 1e-3, 2.0).ok()); // clip > 1
    CHECK(!e->shareGradients(-1, 0).ok());
    CHECK(shardHash(*e, dir.path) == before);
}

namespace {

// One microbatch through both stages and back (stage 0's backward too where `firstBackward`): stage 0's
// output and the gradient stage 1 returned for it.
struct OneTrip {
    Bytes output, gradInput;
};
OneTrip throughBoth(StageEngine& first, StageEngine& last, const Batch& b, bool firstBackward) {
    auto f0 = first.forward(1, b.idsFrame);
    CHECK_MSG(f0.ok(), f0.message());
    auto f1 = last.forward(1, f0->output, b.targetsFrame);
    CHECK_MSG(f1.ok(), f1.message());
    auto b1 = last.backward(1, {});
    CHECK_MSG(b1.ok(), b1.message());
    if (firstBackward) {
        auto b0 = first.backward(1, b1->gradInput);
        CHECK_MSG(b0.ok(), b0.message());
    }
    return {f0->output, b1->gradInput};
}

} // namespace

// What a share check recomputes from a lone replica's trace (trust/Bisection::traceShare): each segment's
// weights' gradient — every block's, and the head's — from the trace's rows alone is the gradient the
// backward accumulated there, at the share's offsets (segmentParameters). A block's gradient computed from
// another block's rows is not.
TESSERA_TEST(eachSegmentsWeightsGradientFromATraceIsWhatTheBackwardAccumulated) {
    const ModelConfig config = twoStages();
    auto first = engine(config, 0), last = engine(config, 1);
    const Batch b = makeBatch(7);
    const OneTrip f0 = throughBoth(*first, *last, b, false);
    auto trace = last->traceBackward({}, f0.output, b.targetsFrame);
    CHECK_MSG(trace.ok(), trace.message());
    auto share = last->shareGradients(0, 0, -1, 32); // one microbatch: its gradient
    CHECK_MSG(share.ok(), share.message());
    const int blocks = last->blocks();
    const std::size_t size = std::size_t(kBatch * kSeq * config.dModel);
    const auto row = [&](int i) {
        return std::span<const float>(*trace).subspan(std::size_t(i) * size, size);
    };
    std::int64_t covered = 0;
    for (int s = 0; s <= blocks; ++s) {
        const auto [offset, count] = last->segmentParameters(s);
        auto g = s < blocks ? last->segmentWeightGradient(s, f0.output,
                                                          s > 0 ? row(s - 1) : std::span<const float>(),
                                                          row(2 * blocks - 1 - s), {})
                            : last->segmentWeightGradient(s, f0.output, row(blocks - 1), {}, b.targetsFrame);
        CHECK_MSG(g.ok(), g.message());
        CHECK(std::int64_t(g->size()) == count);
        const torch::Tensor mine = torch::tensor(*g);
        const torch::Tensor theirs = torch::tensor(
            std::vector<float>(share->values.begin() + offset, share->values.begin() + offset + count));
        const double error = worstRelative(mine, theirs);
        CHECK_MSG(error < 1e-4, "segment " << s << ": " << error);
        covered += count;
    }
    CHECK(covered == last->parameterCount()); // the segments are the whole stage
    // Block 1's gradient from block 0's rows: another gradient.
    auto wrong = last->segmentWeightGradient(1, f0.output, row(0), row(2 * blocks - 1), {});
    CHECK(wrong.ok());
    const auto [offset, count] = last->segmentParameters(1);
    const torch::Tensor theirs = torch::tensor(
        std::vector<float>(share->values.begin() + offset, share->values.begin() + offset + count));
    CHECK(worstRelative(torch::tensor(*wrong), theirs) > 1e-2);
}

// The same on a first stage (issue 41, session 9: a lone first stage's share is looked at by its trace too):
// its backward answers no tensor, but its trace — residuals and the gradients with respect to each, none for
// its input (tokens) — gives every block's weights' gradient, block 0's with the embedding's, as the backward
// accumulated it.
TESSERA_TEST(aFirstStagesTraceGivesEachBlocksWeightsGradient) {
    const ModelConfig config = twoStages();
    auto first = engine(config, 0), last = engine(config, 1);
    const Batch b = makeBatch(11);
    const OneTrip trip = throughBoth(*first, *last, b, true);
    auto trace = first->traceBackward(trip.gradInput, b.idsFrame, {});
    CHECK_MSG(trace.ok(), trace.message());
    const int blocks = first->blocks();
    const std::size_t size = std::size_t(kBatch * kSeq * config.dModel);
    CHECK(trace->size() == std::size_t(2 * blocks) * size); // no row for the tokens' gradient
    auto share = first->shareGradients(0, 0, -1, 32);
    CHECK_MSG(share.ok(), share.message());
    const auto row = [&](int i) {
        return std::span<const float>(*trace).subspan(std::size_t(i) * size, size);
    };
    std::int64_t covered = 0;
    for (int s = 0; s < blocks; ++s) {
        const auto [offset, count] = first->segmentParameters(s);
        auto g = first->segmentWeightGradient(s, b.idsFrame, s > 0 ? row(s - 1) : std::span<const float>(),
                                              row(2 * blocks - 1 - s), {});
        CHECK_MSG(g.ok(), g.message());
        CHECK(std::int64_t(g->size()) == count);
        const double error = worstRelative(
            torch::tensor(*g),
            torch::tensor(std::vector<float>(share->values.begin() + offset, share->values.begin() + offset + count)));
        CHECK_MSG(error < 1e-4, "segment " << s << ": " << error);
        covered += count;
    }
    CHECK(covered == first->parameterCount()); // the blocks (block 0 with the embedding) are the whole stage
}
