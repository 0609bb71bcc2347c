// SPDX-License-Identifier: Apache-2.0
// StageModel under the subspace constraint: every stage boundary activation minus the fixed
// embedding of its tokens lies in span(U), at initialisation and after optimizer steps, so the
// subspace codec's k coefficients rebuild it exactly.
#include "GpuTest.h"
#include "model/StageModel.h"
#include "model/Subspace.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <memory>

using namespace tessera::gpu;

namespace {

// ‖(I − UUᵀ)(x − E[tok])‖ / ‖x − E[tok]‖, in double.
double outOfSubspace(const torch::Tensor& hidden, const torch::Tensor& ids, const torch::Tensor& basis,
                     const torch::Tensor& fixedEmbedding) {
    const auto r = (hidden - torch::embedding(fixedEmbedding, ids)).to(torch::kDouble);
    const auto u = basis.to(torch::kDouble);
    const auto outside = r - torch::matmul(torch::matmul(r, u), u.t());
    return (outside.norm() / r.norm()).item<double>();
}

} // namespace

TESSERA_TEST(boundaryActivationsStayInTheSubspaceWhileTraining) {
    auto config = ModelConfig::preset("tiny").value();
    config.codec = CodecKind::Subspace;
    config.stages = 4;
    const auto fixed = makeSubspaceBasis(config);
    std::vector<std::unique_ptr<StageModel>> stages;
    std::vector<torch::Tensor> parameters;
    for (int s = 0; s < config.stages; ++s) {
        stages.push_back(std::make_unique<StageModel>(config, s));
        for (const auto& [name, p] : stages.back()->namedParameters()) {
            // Gain-free norms: nothing but the fixed parts carries a norm gain.
            CHECK_MSG(name.find("norm") == std::string::npos, name);
            parameters.push_back(p);
        }
    }
    torch::optim::AdamW adam(parameters, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));

    auto generator = at::detail::createCPUGenerator(5);
    double firstLoss = 0, lastLoss = 0;
    for (int step = 0; step <= 4; ++step) {
        const auto tokens = torch::randint(config.vocabSize, {2, 33}, generator, torch::kLong);
        const auto ids = tokens.narrow(1, 0, 32).contiguous();
        const auto targets = tokens.narrow(1, 1, 32).contiguous();
        std::vector<torch::Tensor> inputs{ids};
        for (int s = 0; s + 1 < config.stages; ++s) {
            inputs.push_back(stages[s]->forward(inputs.back()));
            const double ratio = outOfSubspace(inputs.back(), ids, fixed.basis, makeFixedEmbedding(config));
            CHECK_MSG(ratio < 1e-5,
                      "step " << step << " boundary " << s << ": " << ratio << " outside span(U)");
        }
        adam.zero_grad();
        BackwardResult back = stages.back()->backward(inputs.back(), targets);
        (step == 0 ? firstLoss : lastLoss) = back.loss.item<double>();
        for (int s = config.stages - 2; s >= 0; --s)
            back = stages[s]->backward(inputs[s], back.gradInput);
        adam.step();
    }
    // The steps did move the model (else the check after them proves nothing).
    CHECK_MSG(std::abs(lastLoss - firstLoss) > 1e-3, firstLoss << " -> " << lastLoss);
}

TESSERA_TEST(gradientsTowardsTheBoundaryAreMeaningfulInTheSubspace) {
    // The loss depends on a boundary activation only through its span(U) part plus the fixed
    // embedding; the gradient's component in span(U) is what the codec ships (Uᵀ·g).
    auto config = ModelConfig::preset("tiny").value();
    config.codec = CodecKind::Subspace;
    config.stages = 2;
    StageModel first(config, 0);
    StageModel last(config, 1);
    const auto ids =
        torch::randint(config.vocabSize, {2, 16}, at::detail::createCPUGenerator(9), torch::kLong);
    const auto targets = torch::roll(ids, -1, 1);
    const auto hidden = first.forward(ids);
    const auto grad = last.backward(hidden, targets).gradInput;
    const auto u = makeSubspaceU(config);
    const auto inSpan = torch::matmul(torch::matmul(grad, u), u.t());
    // Stage 0 receives only Uᵀ·g worth of signal: its parameter gradients are identical whether
    // it gets g or its projection U·Uᵀ·g.
    first.backward(ids, grad);
    std::vector<torch::Tensor> full;
    for (const auto& [name, p] : first.namedParameters())
        full.push_back(p.grad().clone());
    first.zeroGrad();
    first.backward(ids, inSpan);
    std::size_t i = 0;
    for (const auto& [name, p] : first.namedParameters()) {
        const double scale = full[i].abs().max().item<double>();
        const double diff = (p.grad() - full[i++]).abs().max().item<double>();
        CHECK_MSG(diff <= 1e-4 * scale, name << ": " << diff << " of " << scale);
    }
}

// A GPU makes E's rows by tensor operations on uint64 bits held in int64 (wrapping products, masked
// shifts): run on the CPU, they give the loop's floats to the bit — at the 8b width and vocabulary, whose
// counters reach 2^29, and for the last token of the vocabulary.
TESSERA_TEST(tensorOpEmbeddingRowsAreTheLoopsToTheBit) {
    for (const char* preset : {"tiny", "8b"}) {
        auto config = ModelConfig::preset(preset).value();
        config.codec = CodecKind::Subspace;
        torch::manual_seed(5);
        torch::Tensor ids = torch::randint(config.vocabSize, {2, 600}, torch::kLong); // more than one chunk
        ids[1][599] = config.vocabSize - 1;
        const torch::Tensor loop = fixedEmbeddingRows(config, ids);
        const torch::Tensor ops = fixedEmbeddingRowsByTensorOps(config, ids, torch::kCPU);
        CHECK_MSG(torch::equal(loop, ops),
                  preset << ": differs by " << (loop - ops).abs().max().item<double>());
    }
}

// E is never built whole outside tests: the rows made for a microbatch's tokens are the whole matrix's
// rows to the bit, and an id outside the vocabulary is refused.
TESSERA_TEST(fixedEmbeddingRowsAreTheWholeMatrixsRows) {
    auto config = ModelConfig::preset("tiny").value();
    config.codec = CodecKind::Subspace;
    const torch::Tensor whole = makeFixedEmbedding(config);
    torch::manual_seed(3);
    const torch::Tensor ids = torch::randint(config.vocabSize, {3, 50}, torch::kLong);
    const torch::Tensor rows = fixedEmbeddingRows(config, ids);
    CHECK(rows.sizes() == torch::IntArrayRef({150, config.dModel}));
    CHECK(torch::equal(rows, whole.index_select(0, ids.flatten())));
    CHECK(torch::equal(fixedEmbeddingRows(config, torch::tensor({0, config.vocabSize - 1}, torch::kInt)),
                       whole.index_select(0, torch::tensor({0L, std::int64_t(config.vocabSize - 1)}))));
    for (const std::int64_t bad : {std::int64_t(-1), std::int64_t(config.vocabSize)}) {
        bool threw = false;
        try {
            (void)fixedEmbeddingRowsByTensorOps(config, torch::tensor({bad}), torch::kCPU);
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        CHECK_MSG(threw, bad);
        threw = false;
        try {
            (void)fixedEmbeddingRows(config, torch::tensor({bad}));
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        CHECK_MSG(threw, bad);
    }
}
