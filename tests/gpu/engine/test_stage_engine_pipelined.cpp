// SPDX-License-Identifier: Apache-2.0
// The asynchronous pipeline through the engine facade: a microbatch of step 2 that ran forward
// before step 1's update landed runs backward after it on the weights of its forward (its share
// equals, bit for bit, what an engine that never applied the update shares for it), through a kept
// graph or a recompute alike; each step's share holds its own microbatches only; what a coordinator
// sends cannot make the engine hold more than three steps' gradients, and a restarted coordinator's
// older step numbers start the count afresh.
#include "StageEngineTestSupport.h"

using namespace tessera::test;

namespace {

Bytes gradientFor(StageEngine& e, std::uint64_t seed) {
    auto g = e.syntheticGradient(kBatch, kSeq, seed);
    CHECK_MSG(g.ok(), g.message());
    return std::move(g).value();
}

// forward (of `step`, or synchronous for -1) and backward of one microbatch on stage 0.
void train(StageEngine& e, std::int64_t id, std::uint64_t seed, std::int64_t step) {
    auto f = e.forward(id, makeBatch(seed).idsFrame, {}, step);
    CHECK_MSG(f.ok(), f.message());
    auto b = e.backward(id, gradientFor(e, seed), makeBatch(seed).idsFrame); // the input, for a recompute
    CHECK_MSG(b.ok(), b.message());
}

std::vector<float> share(StageEngine& e, std::int64_t step, int expectedMicrobatches) {
    auto s = e.shareGradients(0, 0, step);
    CHECK_MSG(s.ok(), s.message());
    CHECK_MSG(s->microbatches == expectedMicrobatches,
              "the share counts " << s->microbatches << " microbatches, not " << expectedMicrobatches);
    return s->values;
}

void applyResult(StageEngine& e, const std::vector<float>& result) {
    const tessera::Status applied = e.applyGradients(0, result, true, 1, 1e-2, 1.0);
    CHECK_MSG(applied.ok(), applied.message());
}

} // namespace

TESSERA_TEST(aBackwardAfterAnUpdateRunsOnTheWeightsOfItsForward) {
    TempDir dir;
    const ModelConfig config = twoStages();
    // Reference: microbatch 2's gradient on the initial weights.
    auto reference = engine(config, 0);
    train(*reference, 2, 22, -1);
    const std::vector<float> expected = share(*reference, -1, 1);
    // After the update: what a forward on the new weights gives (the test could fail).
    auto updated = engine(config, 0);
    train(*updated, 1, 11, -1);
    applyResult(*updated, share(*updated, -1, 1));
    const std::string updatedWeights = shardHash(*updated, dir.path);
    train(*updated, 2, 22, -1);
    const std::vector<float> moved = share(*updated, -1, 1);
    CHECK(moved != expected);

    for (const bool keep : {true, false}) {
        auto e = engine(config, 0, keep);
        train(*e, 1, 11, 1);
        // Microbatch 2 of step 2 runs forward before step 1's update lands...
        auto f = e->forward(2, makeBatch(22).idsFrame, {}, 2);
        CHECK_MSG(f.ok(), f.message());
        applyResult(*e, share(*e, 1, 1));        // step 1's share holds microbatch 1 alone
        CHECK(e->keptCount() == (keep ? 1 : 0)); // the update left its graph alone
        // ...and backward after it: on its forward's weights, from the kept graph or recomputed.
        auto b = keep ? e->backward(2, gradientFor(*e, 22))
                      : e->backward(2, gradientFor(*e, 22), makeBatch(22).idsFrame);
        CHECK_MSG(b.ok(), b.message());
        CHECK_MSG(share(*e, 2, 1) == expected,
                  "microbatch 2's gradient is not the one of the weights its forward ran on (keep " << keep
                                                                                                    << ")");
        // The weights themselves moved on, and the stash put them back exactly.
        CHECK(shardHash(*e, dir.path) == updatedWeights);
    }
}

TESSERA_TEST(stepsStayApartAndTheEngineHoldsAtMostThree) {
    const ModelConfig config = twoStages();
    auto e = engine(config, 0);
    train(*e, 1, 1, 1);
    train(*e, 2, 2, 2);
    train(*e, 3, 3, 2);
    train(*e, 4, 4, 3);
    CHECK(e->accumulatedMicrobatches() == 4);
    // A fourth step: the oldest (step 1, one microbatch) goes, whatever a coordinator sends.
    train(*e, 5, 5, 4);
    CHECK(e->accumulatedMicrobatches() == 4);
    (void)share(*e, 2, 2); // step 2 alone; steps 3 and 4 stay apart
    CHECK(e->accumulatedMicrobatches() == 2);
    (void)share(*e, 3, 1);
    CHECK(e->accumulatedMicrobatches() == 1); // step 4's
    // A restarted coordinator counts from an older step: what was held goes, the new step counts.
    train(*e, 6, 6, 2);
    CHECK(e->accumulatedMicrobatches() == 1);
    (void)share(*e, 2, 1);
}

TESSERA_TEST(lookAheadRunsTheWeightsAheadOfTheOptimizers) {
    const ModelConfig config = twoStages();
    auto gather = [](StageEngine& e, bool optimizers) {
        auto values = e.gatherPartition(-1, 1, optimizers);
        CHECK_MSG(values.ok(), values.message());
        return torch::tensor(*values);
    };
    auto e = engine(config, 0), checkpoint = engine(config, 0);
    const torch::Tensor initial = gather(*e, false);
    train(*e, 1, 11, 1);
    const std::vector<float> result = share(*e, 1, 1);
    CHECK(e->applyGradients(0, result, true, 1, 1e-2, 1.0, 2.0).ok());
    CHECK(checkpoint->applyGradients(0, result, true, 1, 1e-2, 1.0).ok());
    // The optimizer's weights are the checkpoint's, bit for bit (SPARTA averages these)...
    const torch::Tensor optimizers = gather(*e, true);
    CHECK(torch::equal(optimizers, gather(*checkpoint, false)));
    // ...and the weights microbatches run on are two updates ahead of where they started.
    const torch::Tensor running = gather(*e, false);
    const double off = (running - optimizers - 2 * (optimizers - initial)).abs().max().item<double>();
    CHECK_MSG(off < 1e-6 && (running - optimizers).abs().max().item<double>() > 1e-4,
              "the look-ahead is off by " << off);
    CHECK(!e->applyGradients(0, result, true, 2, 1e-2, 1.0, 5.0).ok()); // beyond 4: refused
    // A full sync sets the optimizer's weights, with no look-ahead left.
    const std::vector<float> synced(optimizers.data_ptr<float>(),
                                    optimizers.data_ptr<float>() + optimizers.numel());
    CHECK(e->setPartition(-1, 1, synced).ok());
    CHECK(torch::equal(gather(*e, false), optimizers));
}
