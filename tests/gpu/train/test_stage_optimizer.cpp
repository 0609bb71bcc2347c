// SPDX-License-Identifier: Apache-2.0
// StageOptimizer: AdamW written out (so its second moment can be held still) steps exactly as
// LibTorch's AdamW does; a held second moment makes the update linear in the gradient; a gradient
// that is not finite moves nothing.
#include "GpuTest.h"
#include "train/StageOptimizer.h"

#include <torch/optim/adamw.h>
#include <torch/torch.h>

using namespace tessera::gpu;

namespace {

OptimizerOptions options() {
    OptimizerOptions o;
    o.warmupSteps = 0;
    o.clipNorm = 0;
    return o;
}

// One parameter of 300 values with a fixed gradient sequence (seeded), stepped n times.
std::vector<torch::Tensor> gradients(int n) {
    torch::manual_seed(5);
    std::vector<torch::Tensor> out;
    for (int i = 0; i < n; ++i)
        out.push_back(torch::randn({300}) * (0.1 + 0.2 * i));
    return out;
}

} // namespace

TESSERA_TEST(stepsAsLibTorchsAdamWDoes) {
    torch::manual_seed(1);
    const torch::Tensor start = torch::randn({300});
    torch::Tensor ours = start.clone().requires_grad_(true), theirs = start.clone().requires_grad_(true);
    const OptimizerOptions o = options();
    StageOptimizer optimizer({ours}, o);
    torch::optim::AdamW reference({theirs}, torch::optim::AdamWOptions(o.learningRate)
                                                .betas({o.beta1, o.beta2})
                                                .weight_decay(o.weightDecay)
                                                .eps(o.epsilon));
    for (const torch::Tensor& g : gradients(30)) {
        ours.mutable_grad() = g.clone();
        theirs.mutable_grad() = g.clone();
        CHECK(optimizer.stepAgreed(o.learningRate, 1.0));
        reference.step();
    }
    const double diff = (ours - theirs).abs().max().item<double>();
    CHECK_MSG(diff < 1e-6, "after 30 steps the weights differ by " << diff);
    CHECK(!torch::equal(ours, start)); // it moved
    CHECK(optimizer.steps() == 30);
}

TESSERA_TEST(aHeldSecondMomentMakesTheUpdateLinearInTheGradient) {
    // After the same history, a step on g and a step on 2g with the second moment held: the first
    // moment's part of the move doubles exactly (what error feedback relies on); with the second
    // moment moving, 2g also inflates the denominator and the move is far less than double.
    const auto moveAfter = [](double factor, bool varianceMoves) {
        torch::manual_seed(1);
        torch::Tensor w = torch::randn({300}).requires_grad_(true);
        OptimizerOptions o = options();
        o.weightDecay = 0;
        o.beta1 = 0; // the move is the gradient over the denominator: easy to compare
        StageOptimizer optimizer({w}, o);
        for (const torch::Tensor& g : gradients(10)) {
            w.mutable_grad() = g.clone();
            optimizer.stepAgreed(o.learningRate, 1.0);
        }
        const torch::Tensor before = w.detach().clone();
        torch::manual_seed(9);
        w.mutable_grad() = torch::randn({300}) * factor;
        optimizer.stepAgreed(o.learningRate, 1.0, varianceMoves);
        return (w.detach() - before).norm().item<double>();
    };
    const double held = moveAfter(2.0, false) / moveAfter(1.0, false);
    const double moving = moveAfter(2.0, true) / moveAfter(1.0, true);
    CHECK_MSG(std::abs(held - 2.0) < 1e-4, "held: 2g moved " << held << " times as far as g");
    CHECK_MSG(moving < 1.8, "moving: 2g moved " << moving << " times as far as g");
}

TESSERA_TEST(aGradientThatIsNotFiniteMovesNothing) {
    torch::Tensor w = torch::ones({8}).requires_grad_(true);
    const OptimizerOptions o = options();
    StageOptimizer optimizer({w}, o);
    w.mutable_grad() = torch::ones({8});
    CHECK(optimizer.stepAgreed(o.learningRate, 1.0));
    const torch::Tensor after = w.detach().clone();
    torch::Tensor bad = torch::ones({8});
    bad[3] = std::numeric_limits<float>::quiet_NaN();
    w.mutable_grad() = bad;
    CHECK(!optimizer.stepAgreed(o.learningRate, 1.0));
    CHECK(torch::equal(w.detach(), after));
    CHECK(optimizer.steps() == 1);
    // The next good step moves as if the bad one never came (its moments were not touched).
    w.mutable_grad() = torch::ones({8});
    CHECK(optimizer.stepAgreed(o.learningRate, 1.0));
    CHECK(!torch::equal(w.detach(), after));
}
