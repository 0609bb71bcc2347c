// SPDX-License-Identifier: Apache-2.0
// stageParameters lists what a StageModel holds — names, shapes, order and initial values — without
// building it, for every preset and codec; and a piece of a seeded fill is that piece of the whole.
#include "GpuTest.h"
#include "model/ParameterSpec.h"
#include "model/SeededInit.h"
#include "model/StageModel.h"

#include <torch/types.h>

#include <cstring>
#include <set>

using namespace tessera::gpu;

namespace {

ModelConfig presetWith(const char* name, CodecKind codec) {
    auto config = ModelConfig::preset(name).value();
    config.codec = codec;
    return config;
}

std::string describe(const ModelConfig& config, int stage) {
    return config.name + " " + std::string(codecName(config.codec)) + " stage " + std::to_string(stage);
}

// The spec against the built stage, parameter by parameter; with `values`, each parameter's initial
// values too (made again from the spec).
void checkStage(const ModelConfig& config, int stage, bool values) {
    const StageModel model(config, stage);
    const auto named = model.namedParameters();
    const auto specs = stageParameters(config, stage);
    CHECK_MSG(specs.size() == named.size(), describe(config, stage)
                                                << ": " << specs.size() << " vs " << named.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const auto& [name, tensor] = named[i];
        const ParameterSpec& spec = specs[i];
        CHECK_MSG(spec.name == name, describe(config, stage) << ": " << spec.name << " vs " << name);
        CHECK_MSG(spec.shape == std::vector<std::int64_t>(tensor.sizes().begin(), tensor.sizes().end()),
                  name);
        CHECK(spec.numel() == tensor.numel());
        CHECK_MSG((spec.init == ParameterSpec::Init::Ones) == (tensor.dim() == 1), name);
        if (!values)
            continue;
        torch::Tensor expected = torch::empty(tensor.sizes(), torch::kFloat);
        if (spec.init == ParameterSpec::Init::Ones)
            expected.fill_(1.0);
        else
            fillSeededNormal(expected, config.seed, spec.name, spec.stddev);
        CHECK_MSG(torch::equal(expected, tensor), name);
    }
}

} // namespace

TESSERA_TEST(tinyStagesAreWhatTheSpecLists) {
    for (CodecKind codec : {CodecKind::None, CodecKind::Int8, CodecKind::Subspace}) {
        const auto config = presetWith("tiny", codec);
        for (int s = 0; s < config.stages; ++s)
            checkStage(config, s, true);
    }
}

TESSERA_TEST(smallStagesAreWhatTheSpecLists) {
    for (CodecKind codec : {CodecKind::None, CodecKind::Subspace}) {
        const auto config = presetWith("small", codec);
        for (int s = 0; s < config.stages; ++s)
            checkStage(config, s, false);
    }
}

TESSERA_TEST(oneStageAndOneLayerConfigsAreWhatTheSpecLists) {
    // The first stage is also the last: embedding, blocks, norm and head in one.
    auto config = presetWith("tiny", CodecKind::None);
    config.stages = 1;
    checkStage(config, 0, true);
    config.nLayers = 1;
    config.codec = CodecKind::Subspace;
    checkStage(config, 0, true);
}

TESSERA_TEST(eightBillionSpecsCountWhatTheConfigCounts) {
    // Not built (a stage is ~5 GB): the spec's sizes against ModelConfig's arithmetic, which
    // test_stage_parameters checks against StageModel and Llama-3-8B's known size.
    for (CodecKind codec : {CodecKind::None, CodecKind::Subspace}) {
        const auto config = presetWith("8b", codec);
        std::set<std::string> names;
        std::int64_t total = 0;
        for (int s = 0; s < config.stages; ++s) {
            std::int64_t n = 0;
            for (const ParameterSpec& p : stageParameters(config, s)) {
                n += p.numel();
                CHECK_MSG(names.insert(p.name).second, p.name << " appears twice");
                CHECK(p.init == ParameterSpec::Init::Ones ? p.shape == std::vector<std::int64_t>{4096}
                                                          : p.shape.size() == 2 && p.stddev > 0);
            }
            CHECK_MSG(n == config.stageParameterCount(s), describe(config, s) << ": " << n);
            total += n;
        }
        CHECK(total == config.parameterCount());
        CHECK(names.contains("blocks.31.mlp.w2.weight") && !names.contains("blocks.32.mlp.w2.weight"));
    }
    const auto first = stageParameters(presetWith("8b", CodecKind::None), 0);
    CHECK(first.front().name == "embedding.weight" &&
          first.front().shape == (std::vector<std::int64_t>{128256, 4096}) && first.front().stddev == 1.0);
    const auto last = stageParameters(presetWith("8b", CodecKind::Subspace), 6);
    CHECK(last.back().name == "head.weight" &&
          last.back().shape == (std::vector<std::int64_t>{128256, 4096}));
    CHECK(last[last.size() - 3].name == "blocks.31.mlp.w2.weight" &&
          last[last.size() - 3].shape == (std::vector<std::int64_t>{40, 14336}));
}

TESSERA_TEST(aPieceOfASeededFillIsThatPieceOfTheWholeFill) {
    const std::int64_t n = 100'003; // several parallel grains, and an odd end
    const torch::Tensor whole = torch::empty({n}, torch::kFloat);
    fillSeededNormal(whole, 1234, "blocks.3.attn.wq.weight", 0.02);
    const float* expected = whole.data_ptr<float>();
    for (const auto& [first, count] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, n},
                                                                                         {0, 1},
                                                                                         {1, 16'384},
                                                                                         {16'383, 2},
                                                                                         {16'384, 50'000},
                                                                                         {n - 1, 1},
                                                                                         {n - 7, 7},
                                                                                         {40'000, 0}}) {
        // The same values however many threads make them (the coordinator's cores, a node's throttle).
        for (int threads : {1, 2, 5}) {
            std::vector<float> piece(static_cast<std::size_t>(count) + 1, -7.0f);
            fillSeededNormal(piece.data(), count, first, 1234, "blocks.3.attn.wq.weight", 0.02, threads);
            CHECK_MSG(std::memcmp(piece.data(), expected + first, sizeof(float) * count) == 0,
                      "[" << first << ", " << first + count << ") on " << threads << " threads");
            CHECK(piece.back() == -7.0f); // nothing written past the piece
        }
    }
    // Another name or seed is another stream.
    std::vector<float> other(16);
    fillSeededNormal(other.data(), 16, 0, 1234, "blocks.3.attn.wk.weight", 0.02, 1);
    CHECK(std::memcmp(other.data(), expected, sizeof(float) * 16) != 0);
}
