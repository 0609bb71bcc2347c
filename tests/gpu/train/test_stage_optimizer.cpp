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

// Moments kept in 8 bits (ModelConfig::momentBits 8): the weights follow fp32 AdamW's over many steps
// (the first moment to ±7%, the second to ±4.4%: StageOptimizer.h); two
// optimizers fed the same gradients hold the same weights to the bit (rounding is to nearest, so
// replicas stay equal); a variance far below its block's largest is not rounded to zero, which would
// blow its update up.
TESSERA_TEST(eightBitMomentsFollowFp32AdamW) {
    torch::manual_seed(3);
    const torch::Tensor start = torch::randn({1000});
    OptimizerOptions fp32 = options(), coded = options();
    coded.momentBits = 8;
    torch::Tensor a = start.clone().requires_grad_(true), b = start.clone().requires_grad_(true),
                  c = start.clone().requires_grad_(true);
    StageOptimizer reference({a}, fp32), eight({b}, coded), again({c}, coded);
    // Gradients whose scale spans six orders of magnitude within each block of 256.
    const torch::Tensor scale = torch::pow(10.0, -6.0 * torch::rand({1000}));
    for (int i = 0; i < 60; ++i) {
        const torch::Tensor g = torch::randn({1000}) * scale;
        for (torch::Tensor* p : {&a, &b, &c})
            p->mutable_grad() = g.clone();
        CHECK(reference.stepAgreed(fp32.learningRate, 1.0));
        CHECK(eight.stepAgreed(coded.learningRate, 1.0));
        CHECK(again.stepAgreed(coded.learningRate, 1.0));
    }
    CHECK(torch::equal(b, c));
    const torch::Tensor ours = b - start, theirs = a - start;
    const double cosine = ((ours * theirs).sum() / (ours.norm() * theirs.norm())).item<double>();
    const double off = ((ours - theirs).norm() / theirs.norm()).item<double>();
    // (Measured: cosine 0.998, 6% off, under these gradients of pure noise, where each step's rounding
    // adds to a net move that is itself a random walk.)
    CHECK_MSG(cosine > 0.99 && off < 0.15,
              "the 8-bit move: cosine " << cosine << ", " << off << " of fp32's off");
    // The weights with the smallest gradients (under 1e-5, in blocks whose largest is ~1) move as far as
    // with fp32: a linear code would have rounded their first moment to zero and stalled them.
    const torch::Tensor small = scale < 1e-5;
    CHECK(small.sum().item<int>() > 50);
    const double smallMove =
        (ours.masked_select(small).norm() / theirs.masked_select(small).norm()).item<double>();
    CHECK_MSG(smallMove > 0.9 && smallMove < 1.1,
              "the smallest gradients' weights moved " << smallMove << " x fp32's");

    bool threw = false;
    try {
        OptimizerOptions bad = options();
        bad.momentBits = 16;
        StageOptimizer refused({a}, bad);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
}

// With 8-bit moments a step works a chunk of each parameter at a time: chunks start on code blocks, so
// the weights and codes are the whole tensor's to the bit — for a chunk that does not divide the tensor
// (1,000 values: 768 a chunk) and a tensor that does not fill its last block (37 × 91).
TESSERA_TEST(aChunkedEightBitStepIsTheWholeTensorsStep) {
    torch::manual_seed(7);
    const torch::Tensor start = torch::randn({37, 91});
    OptimizerOptions whole = options(), chunked = options();
    whole.momentBits = chunked.momentBits = 8;
    whole.stepChunkValues = 1 << 30;
    chunked.stepChunkValues = 1000;
    torch::Tensor a = start.clone().requires_grad_(true), b = start.clone().requires_grad_(true);
    StageOptimizer one({a}, whole), many({b}, chunked);
    for (int i = 0; i < 5; ++i) {
        const torch::Tensor g = torch::randn({37, 91}) * (0.01 + i);
        a.mutable_grad() = g.clone();
        b.mutable_grad() = g.clone();
        CHECK(one.stepAgreed(whole.learningRate, 1.0) && many.stepAgreed(chunked.learningRate, 1.0));
        CHECK_MSG(torch::equal(a, b), "step " << i << ": differs by " << (a - b).abs().max().item<double>());
    }
}

// The 8-bit step's memory beyond the codes is a chunk's, not a parameter's: stepping a 32 M-value
// parameter (128 MiB of fp32) a second time (its codes exist) raises the process's peak by a few MiB.
// Coding the tensor whole held its two fp32 moments (256 MiB) and the coding's temporaries: on a GPU, the
// 8b head's step went 8.8 GiB over the memory plan.
TESSERA_TEST(anEightBitStepHoldsAChunkNotTheParameter) {
    constexpr std::int64_t n = 32 << 20;
    OptimizerOptions o = options();
    o.momentBits = 8;
    o.stepChunkValues = 1 << 18; // 1 MiB of fp32 values a chunk
    torch::Tensor p = torch::zeros({n}).requires_grad_(true);
    p.mutable_grad() = torch::full({n}, 1e-3f);
    StageOptimizer optimizer({p}, o);
    CHECK(optimizer.stepAgreed(o.learningRate, 1.0));
    p.mutable_grad().fill_(2e-3f);
    if (!tessera::test::resetPeakResident())
        tessera::test::skip("/proc/self/clear_refs cannot be written here");
    const double base = tessera::test::peakResidentMiB();
    CHECK(optimizer.stepAgreed(o.learningRate, 1.0));
    const double grew = tessera::test::peakResidentMiB() - base;
    std::printf("  a second 8-bit step of a 128 MiB parameter raised the peak by %.1f MiB\n", grew);
    CHECK_MSG(grew < 32, "grew " << grew << " MiB");
    CHECK(p.lt(0).all().item<bool>()); // it moved: every weight against its positive gradient
}
