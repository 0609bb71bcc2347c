// SPDX-License-Identifier: Apache-2.0
// Gradient averaging within a stage: replicas that apply a round's result hold the same gradient
// (the weighted mean, exactly when dense), error feedback keeps what compression left out, a
// replica left out of a round loses nothing, and the schedule follows its settings. PowerSGD's two
// rounds (the low rank): a gradient of the exchange's rank arrives exactly, and what the update
// leaves out stays in the replicas' memories.
#include "GpuTest.h"
#include "train/GradientExchange.h"
#include "train/LearningRateSchedule.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>

using namespace tessera::gpu;

namespace {

std::vector<torch::Tensor> makeParameters() {
    // A vector (dense), a matrix small enough to stay dense at rank 4, and two that go low rank.
    std::vector<torch::Tensor> p = {torch::zeros({48}), torch::zeros({6, 5}), torch::zeros({64, 40}),
                                    torch::zeros({32, 4, 8})};
    for (auto& t : p)
        t.set_requires_grad(true);
    return p;
}

void setGradients(std::vector<torch::Tensor>& params, std::uint64_t seed, double scale = 1.0) {
    torch::manual_seed(seed);
    for (auto& t : params)
        t.mutable_grad() = torch::randn(t.sizes()) * scale;
}

// What replicas of one stage see: a gradient they share plus their own microbatches' noise.
void setSharedGradients(std::vector<torch::Tensor>& params, int replica, double scale) {
    torch::manual_seed(77);
    std::vector<torch::Tensor> common;
    for (auto& t : params)
        common.push_back(torch::randn(t.sizes()));
    torch::manual_seed(1000 + replica);
    for (std::size_t i = 0; i < params.size(); ++i)
        params[i].mutable_grad() = (common[i] + torch::randn(params[i].sizes()) * 0.3) * scale;
}

struct Replica {
    std::vector<torch::Tensor> params = makeParameters();
    GradientCompressor compressor{params, 0, 9};
    int microbatches = 0;
    Replica(int rank, int bits = 32)
        : compressor(params, rank, 9, 1.0, bits) {}
    Replica(int rank, std::vector<torch::Tensor> own)
        : params(std::move(own))
        , compressor(params, rank, 9) {}
};

// One round over the replicas (at a low rank, PowerSGD's two): the weighted mean shares, the
// result, applied by every replica.
double runRound(std::vector<Replica>& replicas, GradientRoundCombiner& combiner) {
    int total = 0;
    for (Replica& r : replicas) {
        r.compressor.collect();
        total += r.microbatches;
    }
    const auto meanOf = [&](std::int64_t size, const auto& shareOf) {
        std::vector<double> mean(static_cast<std::size_t>(size), 0.0);
        for (Replica& r : replicas) {
            if (r.microbatches == 0)
                continue;
            const std::vector<float> share = shareOf(r);
            CHECK(std::int64_t(share.size()) == size);
            for (std::size_t i = 0; i < share.size(); ++i)
                mean[i] += r.microbatches * double(share[i]);
        }
        std::vector<float> out(mean.size());
        for (std::size_t i = 0; i < mean.size(); ++i)
            out[i] = float(mean[i] / total);
        return out;
    };
    std::vector<float> basis;
    if (combiner.layout().lowRank())
        basis = combiner.basis(meanOf(combiner.layout().basisSize(),
                                      [](Replica& r) { return r.compressor.basisShare(r.microbatches); }));
    const std::vector<float> meanShare = meanOf(combiner.layout().shareSize(), [&](Replica& r) {
        tessera::Result<std::vector<float>> share = r.compressor.share(r.microbatches, basis);
        CHECK_MSG(share.ok(), share.message());
        return share.ok() ? std::move(share).value() : std::vector<float>();
    });
    double norm = 0;
    const auto result = combiner.result(meanShare, &norm);
    for (Replica& r : replicas) {
        const tessera::Status applied = r.compressor.apply(result, r.microbatches > 0, combiner.round());
        CHECK_MSG(applied.ok(), applied.message());
    }
    return norm;
}

double maxDifference(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, (a[i].grad() - b[i].grad()).abs().max().item<double>());
    return worst;
}

} // namespace

TESSERA_TEST(theLayoutSendsMatricesLowRankAndVectorsDense) {
    const GradientLayout layout({{48}, {6, 5}, {64, 40}, {32, 4, 8}}, 4);
    const auto& e = layout.entries();
    CHECK(e[0].rank == 0 && e[1].rank == 0); // 4·(6+5)·2 > 30: rank 4 would not pay
    CHECK(e[2].rank == 4 && e[2].m == 64 && e[2].n == 40);
    CHECK(e[3].rank == 4 && e[3].m == 32 && e[3].n == 32);
    CHECK(layout.basisSize() == 4 * 64 + 4 * 32);           // the first round: P, m × r
    CHECK(layout.shareSize() == 48 + 30 + 4 * 40 + 4 * 32); // the second: Q, n × r, and the dense
    CHECK(layout.resultSize() == 48 + 30 + 4 * (64 + 40) + 4 * (32 + 32)); // [P̂ | Q̄] and the dense
    // Both rounds, per replica and step: r·(m + n) up, r·(2m + n) down.
    CHECK(layout.basisSize() + layout.shareSize() == 48 + 30 + 4 * (64 + 40) + 4 * (32 + 32));
    CHECK(layout.gradientSize() == 48 + 30 + 64 * 40 + 32 * 32);
    CHECK(GradientLayout({{64, 40}}, 0).shareSize() == 64 * 40); // rank 0: everything dense
}

TESSERA_TEST(denseRoundsGiveEveryReplicaTheWeightedMeanExactly) {
    std::vector<Replica> replicas;
    for (int r = 0; r < 3; ++r)
        replicas.emplace_back(0);
    const int counts[3] = {1, 2, 5};
    std::vector<torch::Tensor> expected;
    for (int r = 0; r < 3; ++r) {
        // Sums over the replica's microbatches, as backward accumulates them.
        setGradients(replicas[r].params, 100 + r, counts[r]);
        replicas[r].microbatches = counts[r];
        for (std::size_t i = 0; i < replicas[r].params.size(); ++i) {
            const torch::Tensor g = replicas[r].params[i].grad().clone();
            if (expected.size() <= i)
                expected.push_back(g);
            else
                expected[i] = expected[i] + g;
        }
    }
    GradientRoundCombiner combiner(replicas[0].compressor.layout(), 9);
    runRound(replicas, combiner);
    for (auto& e : expected)
        e = e / 8.0;
    for (const Replica& r : replicas)
        for (std::size_t i = 0; i < expected.size(); ++i) {
            const double err = (r.params[i].grad() - expected[i]).abs().max().item<double>();
            CHECK_MSG(err < 1e-5, "parameter " << i << " differs from the weighted mean by " << err);
        }
    CHECK(maxDifference(replicas[0].params, replicas[2].params) == 0);
}

TESSERA_TEST(fewerBitsKeepReplicasEqualAndLoseNothingOverRounds) {
    for (const int bits : {8, 4}) {
        std::vector<Replica> replicas;
        for (int r = 0; r < 3; ++r)
            replicas.emplace_back(0, bits);
        GradientRoundCombiner combiner(replicas[0].compressor.layout(), 9, bits);
        const int rounds = 30;
        std::vector<torch::Tensor> applied, exact;
        double firstRoundError = 0;
        for (int k = 0; k < rounds; ++k) {
            std::vector<torch::Tensor> mean;
            for (int r = 0; r < 3; ++r) {
                setGradients(replicas[r].params, 1000 * k + r, 2.0);
                replicas[r].microbatches = 2;
                for (std::size_t i = 0; i < replicas[r].params.size(); ++i) {
                    const torch::Tensor g = replicas[r].params[i].grad() / 6.0;
                    mean.size() <= i ? mean.push_back(g.clone()) : void(mean[i] += g);
                }
            }
            runRound(replicas, combiner);
            // Every replica applies the same rounded result: they stay equal, bit for bit.
            CHECK(maxDifference(replicas[0].params, replicas[1].params) == 0);
            CHECK(maxDifference(replicas[0].params, replicas[2].params) == 0);
            for (std::size_t i = 0; i < mean.size(); ++i) {
                const torch::Tensor got = replicas[0].params[i].grad().clone();
                applied.size() <= i ? applied.push_back(got) : void(applied[i] += got);
                exact.size() <= i ? exact.push_back(mean[i].clone()) : void(exact[i] += mean[i]);
            }
            if (k == 0)
                for (std::size_t i = 0; i < mean.size(); ++i)
                    firstRoundError = std::max(
                        firstRoundError, ((applied[i] - exact[i]).norm() / exact[i].norm()).item<double>());
        }
        // Error feedback on both sides: over 30 rounds, what was applied adds up to what the exact
        // means add up to, less at most about one round's rounding (it does not accumulate).
        double total = 0, drift = 0;
        for (std::size_t i = 0; i < exact.size(); ++i) {
            total += exact[i].pow(2).sum().item<double>();
            drift += (applied[i] - exact[i]).pow(2).sum().item<double>();
        }
        const double relative = std::sqrt(drift / total);
        CHECK_MSG(firstRoundError > 0, bits << " bits: the first round was exact");
        CHECK_MSG(firstRoundError < (bits == 8 ? 0.02 : 0.3),
                  bits << " bits: one round off by " << firstRoundError);
        CHECK_MSG(relative < 0.5 * firstRoundError, bits << " bits: 30 rounds off by " << relative
                                                         << " (one round: " << firstRoundError << ")");
    }
    // Fewer bits need a dense layout: a low-rank basis must reach every replica exactly.
    bool refused = false;
    try {
        std::vector<torch::Tensor> p = makeParameters();
        GradientCompressor c(p, 4, 9, 1.0, 8);
    } catch (const std::invalid_argument&) {
        refused = true;
    }
    CHECK(refused);
}

TESSERA_TEST(errorFeedbackCarriesWhatTheLowRankUpdateLeftOut) {
    std::vector<Replica> replicas;
    for (int r = 0; r < 3; ++r)
        replicas.emplace_back(2);
    GradientRoundCombiner combiner(replicas[0].compressor.layout(), 9);
    // The same full-rank gradients every step; after K rounds what was applied plus what the
    // memories hold is exactly K times the mean gradient (nothing is lost, only delayed).
    std::vector<torch::Tensor> applied, appliedAt10;
    const int rounds = 30;
    for (int k = 0; k < rounds; ++k) {
        for (int r = 0; r < 3; ++r) {
            setSharedGradients(replicas[r].params, r, 2.0);
            replicas[r].microbatches = 2;
        }
        runRound(replicas, combiner);
        CHECK(maxDifference(replicas[0].params, replicas[1].params) == 0); // every replica the same update
        for (std::size_t i = 0; i < replicas[0].params.size(); ++i) {
            const torch::Tensor g = replicas[0].params[i].grad().clone();
            if (applied.size() <= i)
                applied.push_back(g);
            else
                applied[i] = applied[i] + g;
        }
        if (k == 9)
            for (const auto& a : applied)
                appliedAt10.push_back(a.clone());
    }
    // Σ_r memory_r (sums) + N·Σ applied (means) = K · Σ_r sums, N = 6 microbatches per round.
    std::vector<torch::Tensor> sums(replicas[0].params.size());
    for (int r = 0; r < 3; ++r) {
        setSharedGradients(replicas[r].params, r, 2.0);
        for (std::size_t i = 0; i < sums.size(); ++i)
            sums[i] = sums[i].defined() ? sums[i] + replicas[r].params[i].grad()
                                        : replicas[r].params[i].grad().clone();
    }
    for (std::size_t i = 0; i < sums.size(); ++i) {
        torch::Tensor memories = torch::zeros_like(replicas[0].compressor.memory()[i]);
        for (const Replica& r : replicas)
            memories = memories + r.compressor.memory()[i];
        const torch::Tensor lhs = memories + (applied[i] * 6.0).reshape(memories.sizes());
        const torch::Tensor rhs = (sums[i] * rounds).reshape(memories.sizes());
        const double gap = (lhs - rhs).abs().max().item<double>() / rhs.abs().max().item<double>();
        CHECK_MSG(gap < 1e-4,
                  "parameter " << i << ": applied + memories differ from the gradients by " << gap);
    }
    double memory = 0;
    for (const Replica& r : replicas)
        memory += r.compressor.memorySquaredNorm();
    CHECK_MSG(memory > 0, "a rank-2 exchange of full-rank gradients leaves something in the memories");
    // Nothing lost, only delayed: the applied average approaches the mean gradient round by round.
    for (std::size_t i = 2; i < sums.size(); ++i) {
        const torch::Tensor mean = sums[i] / 6.0;
        const double at10 =
            ((appliedAt10[i] / 10.0) - mean).norm().item<double>() / mean.norm().item<double>();
        const double at30 = ((applied[i] / rounds) - mean).norm().item<double>() / mean.norm().item<double>();
        CHECK_MSG(at30 < 0.8 * at10, "parameter " << i << ": the applied average is " << at10
                                                  << " from the mean after 10 rounds, " << at30
                                                  << " after 30");
    }
}

// Left out of a round, a replica still applies the update. At a low rank its memory keeps all of the
// low-rank entries' gradient (error feedback); a dense entry's gradient is dropped — carried, a replica left
// out for k rounds came back with k rounds' gradients in one share (issue 41: outvoted, then struck).
TESSERA_TEST(aReplicaLeftOutOfARoundKeepsItsLowRankGradientDropsItsDenseOneAndStillAppliesTheUpdate) {
    for (const int rank : {4, 0}) {
        std::vector<Replica> replicas;
        for (int r = 0; r < 2; ++r)
            replicas.emplace_back(rank);
        GradientRoundCombiner combiner(replicas[0].compressor.layout(), 9);
        setGradients(replicas[0].params, 300, 1.0);
        replicas[0].microbatches = 1;
        setGradients(replicas[1].params, 301, 1.0);
        replicas[1].microbatches = 0; // processed nothing it may count (e.g. missed the deadline)
        double kept = 0;
        for (std::size_t i = 0; i < replicas[1].params.size(); ++i)
            if (replicas[1].compressor.layout().entries()[i].rank > 0)
                kept += replicas[1].params[i].grad().pow(2).sum().item<double>();
        runRound(replicas, combiner);
        const double memory = replicas[1].compressor.memorySquaredNorm();
        if (rank == 0)
            CHECK_MSG(memory == 0, "a dense exchange's left-out replica keeps " << memory);
        else
            CHECK_MSG(kept > 0 && std::abs(memory - kept) < 1e-3 * kept,
                      "the left-out replica's memory " << memory << " vs its low-rank entries' " << kept);
        CHECK(maxDifference(replicas[0].params, replicas[1].params) == 0);
    }
}

TESSERA_TEST(theCombinerMeasuresTheUpdatesNormItself) {
    std::vector<Replica> replicas;
    replicas.emplace_back(4);
    GradientRoundCombiner combiner(replicas[0].compressor.layout(), 9);
    setGradients(replicas[0].params, 400, 1.0);
    replicas[0].microbatches = 1;
    const double norm = runRound(replicas, combiner);
    double applied = 0;
    for (const auto& p : replicas[0].params)
        applied += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
    CHECK_MSG(std::abs(norm - applied) < 1e-4 * applied, "combiner " << norm << " vs applied " << applied);
}

TESSERA_TEST(aResultOfTheWrongSizeOrNotFiniteChangesNothing) {
    Replica replica(4);
    setGradients(replica.params, 500, 1.0);
    replica.compressor.collect();
    const double before = replica.compressor.memorySquaredNorm();
    std::vector<float> result(static_cast<std::size_t>(replica.compressor.layout().resultSize()), 0.0f);
    CHECK(!replica.compressor.apply(std::span<const float>(result).first(10), true, 1).ok());
    result[3] = std::nanf("");
    const tessera::Status nan = replica.compressor.apply(result, true, 1);
    CHECK(!nan.ok() && nan.message().find("not finite") != std::string::npos);
    CHECK(replica.compressor.memorySquaredNorm() == before);
    CHECK(replica.compressor.basisRound() == 0);
}

TESSERA_TEST(twoRoundsSendALowRankGradientExactlyAndKeepWhatTheyLeaveOut) {
    std::vector<Replica> replicas;
    for (int r = 0; r < 3; ++r)
        replicas.emplace_back(4, std::vector<torch::Tensor>{torch::zeros({48}).set_requires_grad(true),
                                                            torch::zeros({64, 40}).set_requires_grad(true)});
    GradientRoundCombiner combiner(replicas[0].compressor.layout(), 9);
    // A gradient of rank 2 on the matrix: its basis is found from this step's mean, so the mean
    // arrives whole (a one-round exchange would project it on the previous step's basis instead).
    torch::manual_seed(5);
    const torch::Tensor u = torch::randn({64, 2}), v = torch::randn({2, 40});
    const int microbatches[3] = {1, 3, 0};
    for (std::size_t r = 0; r < 3; ++r) {
        replicas[r].params[0].mutable_grad() = torch::randn({48}) * double(microbatches[r]);
        replicas[r].params[1].mutable_grad() = u.mm(v) * double(microbatches[r] + 1);
        replicas[r].microbatches = microbatches[r];
    }
    const torch::Tensor expected = (u.mm(v) * 2 + u.mm(v) * 4) / 4; // replica 2 processed nothing
    const torch::Tensor vectorMean = (replicas[0].params[0].grad() + replicas[1].params[0].grad()) / 4;
    runRound(replicas, combiner);
    for (std::size_t r = 0; r < 3; ++r) {
        CHECK((replicas[r].params[1].grad() - expected).abs().max().item<double>() <
              1e-4 * expected.abs().max().item<double>());
        CHECK((replicas[r].params[0].grad() - vectorMean).abs().max().item<double>() < 1e-5);
    }
    CHECK(replicas[0].compressor.memory()[1].abs().max().item<double>() < 1e-3);
    // Replica 2 counted nothing: all of its gradient waits in its memory.
    CHECK((replicas[2].compressor.memory()[1] - u.mm(v)).abs().max().item<double>() < 1e-6);

    // A full-rank gradient: the update is rank 4, and the memories hold exactly what it left out.
    std::vector<torch::Tensor> carried;
    for (std::size_t r = 0; r < 3; ++r) {
        replicas[r].params[1].mutable_grad() = torch::randn({64, 40});
        replicas[r].microbatches = 1;
        carried.push_back(replicas[r].compressor.memory()[1] + replicas[r].params[1].grad());
    }
    runRound(replicas, combiner);
    const torch::Tensor update = replicas[0].params[1].grad();
    CHECK(torch::linalg_matrix_rank(update).item<std::int64_t>() == 4);
    CHECK(maxDifference(replicas[0].params, replicas[2].params) == 0); // one update for all
    torch::Tensor lost = carried[0] + carried[1] + carried[2] - update * 3;
    for (const Replica& r : replicas)
        lost -= r.compressor.memory()[1];
    CHECK_MSG(lost.abs().max().item<double>() < 1e-4,
              "the memories miss " << lost.abs().max().item<double>());
    CHECK(update.norm().item<double>() < (carried[0] + carried[1] + carried[2]).norm().item<double>() / 3);
    CHECK(combiner.round() == 2 && replicas[1].compressor.basisRound() == 2); // its warm start: round 2's
}

TESSERA_TEST(aBasisOfTheWrongSizeOrNotFiniteMakesNoShare) {
    Replica replica(4);
    setGradients(replica.params, 600, 1.0);
    replica.compressor.collect();
    const std::vector<float> first = replica.compressor.basisShare(1);
    CHECK(std::int64_t(first.size()) == replica.compressor.layout().basisSize());
    std::vector<float> basis(first.size(), 0.1f);
    CHECK(!replica.compressor.share(1, std::span<const float>(basis).first(5)).ok());
    basis[7] = std::numeric_limits<float>::infinity();
    const auto refused = replica.compressor.share(1, basis);
    CHECK(!refused.ok() && refused.message().find("not finite") != std::string::npos);
}

TESSERA_TEST(orthonormalColumnsAreOrthonormalAndReplaceAVanishedColumn) {
    torch::manual_seed(3);
    torch::Tensor x = torch::randn({50, 4});
    x.select(1, 2).zero_();
    const torch::Tensor q = orthonormalColumns(x, 11);
    const double err = (q.t().mm(q) - torch::eye(4)).abs().max().item<double>();
    CHECK_MSG(err < 1e-5, "QᵀQ is " << err << " from the identity");
    CHECK((orthonormalColumns(x, 11) - q).abs().max().item<double>() == 0); // reproducible
}

TESSERA_TEST(theScheduleWarmsUpThenDecays) {
    LearningRateSchedule s;
    s.peak = 1e-3;
    s.warmupSteps = 10;
    CHECK(std::abs(s.at(1) - 1e-4) < 1e-12 && std::abs(s.at(10) - 1e-3) < 1e-12);
    CHECK(std::abs(s.at(500) - 1e-3) < 1e-12); // no decay: constant after the warm-up
    s.decay = LearningRateSchedule::Decay::Cosine;
    s.decaySteps = 110;
    s.minRatio = 0.1;
    CHECK(std::abs(s.at(60) - 1e-3 * (0.1 + 0.9 * 0.5)) < 1e-12); // half-way: the cosine's middle
    CHECK(std::abs(s.at(110) - 1e-4) < 1e-12 && std::abs(s.at(1000) - 1e-4) < 1e-12);
    s.decay = LearningRateSchedule::Decay::Linear;
    CHECK(std::abs(s.at(35) - 1e-3 * (0.1 + 0.9 * 0.75)) < 1e-12);
    LearningRateSchedule::Decay d;
    CHECK(parseDecay("linear", d) && d == LearningRateSchedule::Decay::Linear && !parseDecay("exp", d));
}
