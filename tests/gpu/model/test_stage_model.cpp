// SPDX-License-Identifier: Apache-2.0
// StageModel: the model cut into stages computes what the whole model computes (same weights,
// loss and gradients when hidden states go forward and gradients back), kept-activation and
// recompute backward agree, gradients accumulate, and a bf16 compute dtype trains fp32 masters.
#include "GpuTest.h"
#include "model/StageModel.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <map>
#include <memory>

using namespace tessera::gpu;

namespace {

constexpr int kBatch = 2;
constexpr int kSeq = 32;

ModelConfig tinyConfig(CodecKind codec, int stages) {
    auto config = ModelConfig::preset("tiny").value();
    config.codec = codec;
    config.stages = stages;
    return config;
}

std::vector<std::unique_ptr<StageModel>> buildStages(const ModelConfig& config,
                                                     torch::ScalarType dtype = torch::kFloat) {
    std::vector<std::unique_ptr<StageModel>> stages;
    for (int s = 0; s < config.stages; ++s)
        stages.push_back(std::make_unique<StageModel>(config, s, torch::kCPU, dtype));
    return stages;
}

struct Batch {
    torch::Tensor ids;
    torch::Tensor targets;
};

Batch makeBatch(const ModelConfig& config, std::uint64_t seed) {
    auto generator = at::detail::createCPUGenerator(seed);
    auto tokens = torch::randint(config.vocabSize, {kBatch, kSeq + 1}, generator, torch::kLong);
    return {tokens.narrow(1, 0, kSeq).contiguous(), tokens.narrow(1, 1, kSeq).contiguous()};
}

// Forward stage by stage (no graph), then backward in reverse recomputing from each stage's
// input, as a pipeline of recomputing workers does. Returns the loss.
double pipelineStep(std::vector<std::unique_ptr<StageModel>>& stages, const Batch& batch) {
    std::vector<torch::Tensor> inputs{batch.ids};
    for (std::size_t s = 0; s + 1 < stages.size(); ++s)
        inputs.push_back(stages[s]->forward(inputs.back()));
    BackwardResult back = stages.back()->backward(inputs.back(), batch.targets);
    const double loss = back.loss.item<double>();
    for (std::size_t s = stages.size() - 1; s-- > 0;)
        back = stages[s]->backward(inputs[s], back.gradInput);
    CHECK(!back.gradInput.defined()); // stage 0 takes ids
    return loss;
}

std::map<std::string, torch::Tensor> gradients(const std::vector<std::unique_ptr<StageModel>>& stages) {
    std::map<std::string, torch::Tensor> grads;
    for (const auto& stage : stages)
        for (const auto& [name, p] : stage->namedParameters()) {
            CHECK_MSG(p.grad().defined(), name << " has no gradient");
            grads[name] = p.grad().clone();
        }
    return grads;
}

// max |a − b| over max |b| for every tensor; every name on both sides.
double worstRelativeDifference(const std::map<std::string, torch::Tensor>& a,
                               const std::map<std::string, torch::Tensor>& b) {
    CHECK_MSG(a.size() == b.size(), a.size() << " vs " << b.size() << " tensors");
    double worst = 0;
    for (const auto& [name, tensor] : b) {
        const auto it = a.find(name);
        CHECK_MSG(it != a.end(), name << " missing");
        const double scale = tensor.abs().max().item<double>();
        const double diff = (it->second - tensor).abs().max().item<double>();
        worst = std::max(worst, diff / std::max(scale, 1e-30));
    }
    return worst;
}

void checkSplitMatchesWhole(CodecKind codec) {
    auto whole = buildStages(tinyConfig(codec, 1));
    auto split = buildStages(tinyConfig(codec, 4));

    // The stages' tensors are the whole model's tensors of the same names, bit for bit.
    std::map<std::string, torch::Tensor> wholeParams;
    for (const auto& [name, p] : whole[0]->namedParameters())
        wholeParams[name] = p;
    std::size_t splitCount = 0;
    for (const auto& stage : split)
        for (const auto& [name, p] : stage->namedParameters()) {
            ++splitCount;
            const auto it = wholeParams.find(name);
            CHECK_MSG(it != wholeParams.end(), name << " is not in the whole model");
            CHECK_MSG(torch::equal(it->second, p), name << " differs");
        }
    CHECK_MSG(splitCount == wholeParams.size(), splitCount << " vs " << wholeParams.size());

    const Batch batch = makeBatch(whole[0]->config(), 11);
    const double wholeLoss = pipelineStep(whole, batch);
    const double splitLoss = pipelineStep(split, batch);
    CHECK_MSG(std::abs(wholeLoss - splitLoss) <= 1e-5 * std::abs(wholeLoss),
              "whole " << wholeLoss << " split " << splitLoss);
    // A fresh model predicts roughly uniformly over 256 bytes.
    CHECK_MSG(wholeLoss > 4.0 && wholeLoss < 8.0, "loss " << wholeLoss);

    const double worst = worstRelativeDifference(gradients(split), gradients(whole));
    CHECK_MSG(worst <= 1e-5, "gradients differ by " << worst << " of their scale");

    // The no-graph forward gives the same loss.
    torch::Tensor h = batch.ids;
    for (int s = 0; s < 3; ++s)
        h = split[s]->forward(h);
    const double forwardLoss = split[3]->forward(h, batch.targets).item<double>();
    CHECK_MSG(std::abs(forwardLoss - wholeLoss) <= 1e-5 * wholeLoss, forwardLoss << " vs " << wholeLoss);
}

} // namespace

TESSERA_TEST(splitStagesMatchWholeModel) {
    checkSplitMatchesWhole(CodecKind::None);
}

TESSERA_TEST(splitStagesMatchWholeModelUnderSubspaceConstraint) {
    checkSplitMatchesWhole(CodecKind::Subspace);
}

TESSERA_TEST(keptActivationsBackwardEqualsRecompute) {
    const auto config = tinyConfig(CodecKind::None, 4);
    auto stages = buildStages(config);
    const Batch batch = makeBatch(config, 12);

    // Kept: forwardKeep through the pipeline, backward by microbatch id.
    const MicrobatchId id = 42;
    std::vector<torch::Tensor> inputs{batch.ids};
    for (int s = 0; s < 3; ++s)
        inputs.push_back(stages[s]->forwardKeep(id, inputs.back()));
    const double keptLoss = stages[3]->forwardKeep(id, inputs.back(), batch.targets).item<double>();
    for (const auto& stage : stages)
        CHECK(stage->hasKept(id) && stage->keptCount() == 1);
    torch::Tensor grad;
    std::vector<torch::Tensor> keptGradInputs(4);
    for (int s = 3; s >= 0; --s) {
        const BackwardResult back = stages[s]->backward(id, grad);
        CHECK(!stages[s]->hasKept(id));
        CHECK(back.loss.defined() == (s == 3));
        keptGradInputs[s] = grad = back.gradInput;
    }
    const auto kept = gradients(stages);

    for (auto& stage : stages)
        stage->zeroGrad();
    const double recomputedLoss = pipelineStep(stages, batch);
    CHECK_MSG(keptLoss == recomputedLoss, keptLoss << " vs " << recomputedLoss);
    const double worst = worstRelativeDifference(kept, gradients(stages));
    CHECK_MSG(worst <= 1e-6, "kept and recomputed gradients differ by " << worst);
    // Recomputing one stage alone hands back the same input gradient.
    stages[2]->zeroGrad();
    const auto back = stages[2]->backward(inputs[2], keptGradInputs[3]);
    CHECK(torch::allclose(back.gradInput, keptGradInputs[2], 1e-6, 1e-9));

    // Nothing kept for an id: the caller is told to recompute.
    bool threw = false;
    try {
        (void)stages[1]->backward(id, keptGradInputs[2]);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
    stages[1]->forwardKeep(7, inputs[1]);
    stages[1]->dropKept(7);
    CHECK(stages[1]->keptCount() == 0);
}

// Recomputing a block at a time (the layout that fits an 8b stage on a 24 GB GPU) gives the loss, every
// gradient and the input gradient of the whole-stage recompute to the bit, in fp32 and bf16, on the
// first, a middle and the last stage, with and without the subspace constraint.
TESSERA_TEST(recomputingABlockAtATimeEqualsTheWholeStage) {
    for (const CodecKind codec : {CodecKind::None, CodecKind::Subspace})
        for (const torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
            const auto config = tinyConfig(codec, 3);
            auto whole = buildStages(config, dtype);
            auto perBlock = buildStages(config, dtype);
            for (auto& stage : perBlock) {
                CHECK(stage->blockRange().second - stage->blockRange().first >= 2); // blocks to split
                stage->setRecomputePerBlock(true);
            }
            const Batch batch = makeBatch(config, 21);
            const double wholeLoss = pipelineStep(whole, batch);
            const double perBlockLoss = pipelineStep(perBlock, batch);
            CHECK_MSG(wholeLoss == perBlockLoss, wholeLoss << " vs " << perBlockLoss);
            const auto a = gradients(whole);
            const auto b = gradients(perBlock);
            for (const auto& [name, g] : a)
                CHECK_MSG(torch::equal(g, b.at(name)),
                          name << " differs by " << (g - b.at(name)).abs().max().item<double>() << " ("
                               << codecName(codec) << ", " << dtype << ")");
            // The gradient handed to the stage before, alone.
            const torch::Tensor h = whole[0]->forward(batch.ids);
            const torch::Tensor g = torch::randn_like(whole[1]->forward(h));
            CHECK(torch::equal(whole[1]->backward(h, g).gradInput, perBlock[1]->backward(h, g).gradInput));
        }
}

// With more tokens than a chunk, the last stage's head and loss go a chunk at a time: the loss and every
// gradient as the whole stage's, but for the order of the sums.
TESSERA_TEST(theHeadAChunkOfTokensAtATimeAgreesWithTheWholeStage) {
    const auto config = tinyConfig(CodecKind::None, 3);
    auto whole = buildStages(config);
    auto perBlock = buildStages(config);
    for (auto& stage : perBlock) {
        stage->setRecomputePerBlock(true);
        stage->setLossChunkTokens(24); // 64 tokens: chunks of 24, 24 and 16
    }
    const Batch batch = makeBatch(config, 22);
    const double wholeLoss = pipelineStep(whole, batch);
    const double perBlockLoss = pipelineStep(perBlock, batch);
    CHECK_MSG(std::abs(wholeLoss - perBlockLoss) <= 1e-6 * wholeLoss, wholeLoss << " vs " << perBlockLoss);
    const double worst = worstRelativeDifference(gradients(perBlock), gradients(whole));
    CHECK_MSG(worst <= 1e-5 && worst > 0, "the chunked head's gradients differ by " << worst);
}

TESSERA_TEST(gradientsAccumulateAcrossBackwardCalls) {
    const auto config = tinyConfig(CodecKind::None, 4);
    auto stages = buildStages(config);
    const Batch batch = makeBatch(config, 13);
    pipelineStep(stages, batch);
    const auto once = gradients(stages);
    pipelineStep(stages, batch);
    auto twice = gradients(stages);
    for (auto& [name, g] : twice)
        g = g / 2;
    CHECK_MSG(worstRelativeDifference(twice, once) <= 1e-6, "two backward calls are not twice one");

    for (auto& stage : stages)
        stage->zeroGrad();
    for (const auto& [name, g] : gradients(stages))
        CHECK_MSG(g.abs().max().item<double>() == 0, name << " not zeroed");
}

TESSERA_TEST(bf16ComputeTrainsFp32Masters) {
    const auto config = tinyConfig(CodecKind::None, 1);
    auto fp32 = buildStages(config);
    auto bf16 = buildStages(config, torch::kBFloat16);
    CHECK(bf16[0]->computeDtype() == torch::kBFloat16);
    const Batch batch = makeBatch(config, 14);
    const double loss32 = pipelineStep(fp32, batch);
    const double loss16 = pipelineStep(bf16, batch);
    CHECK_MSG(std::abs(loss32 - loss16) < 2e-2 * loss32, loss32 << " vs " << loss16);

    // Gradients land on the fp32 masters and point the same way as fp32's.
    const auto g32 = gradients(fp32);
    for (const auto& [name, g] : gradients(bf16)) {
        CHECK_MSG(g.scalar_type() == torch::kFloat, name);
        const auto& ref = g32.at(name);
        const double cosine = (g * ref).sum().item<double>() / (g.norm() * ref.norm()).item<double>();
        CHECK_MSG(cosine > 0.98, name << " cosine " << cosine);
    }

    // An in-place update of the masters (what an optimizer step does) reaches the bf16 copy.
    {
        torch::NoGradGuard noGrad;
        for (auto& stage : {fp32[0].get(), bf16[0].get()})
            for (const auto& [name, p] : stage->namedParameters())
                if (name == "head.weight")
                    p.mul_(3.0);
    }
    const double after32 = fp32[0]->forward(batch.ids, batch.targets).item<double>();
    const double after16 = bf16[0]->forward(batch.ids, batch.targets).item<double>();
    CHECK_MSG(std::abs(after32 - loss32) > 0.05, "the update did not change the loss");
    CHECK_MSG(std::abs(after32 - after16) < 2e-2 * after32, after32 << " vs " << after16);
}

TESSERA_TEST(misuseIsRefusedWithAReason) {
    const auto config = tinyConfig(CodecKind::None, 4);
    auto expectThrow = [](auto&& f, const char* what) {
        try {
            f();
        } catch (const std::invalid_argument& e) {
            CHECK_MSG(std::string(e.what()).find(what) != std::string::npos, e.what());
            return;
        }
        CHECK_MSG(false, "no exception for " << what);
    };
    expectThrow([&] { StageModel(config, 4); }, "stage 4");
    StageModel first(config, 0);
    StageModel middle(config, 1);
    StageModel last(config, 3);
    const auto ids = torch::zeros({2, 8}, torch::kLong);
    expectThrow([&] { first.forward(torch::zeros({2, 8, 128})); }, "token ids");
    expectThrow([&] { middle.forward(ids); }, "hidden states");
    expectThrow([&] { first.forward(torch::zeros({2, 300}, torch::kLong)); }, "sequence length");
    expectThrow([&] { last.forward(torch::zeros({2, 8, 128})); }, "targets");
    expectThrow([&] { middle.forward(torch::zeros({2, 8, 128}), ids); }, "only the last stage");
    expectThrow([&] { middle.backward(torch::zeros({2, 8, 128}), torch::zeros({2, 4, 128})); }, "gradOutput");
}
