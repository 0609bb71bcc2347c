// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the StageEngine tests share: two tiny stages, options, a learnable batch, one microbatch
// through both stages, and the weights read back through a shard.
#include "GpuTest.h"
#include "codec/Codec.h"
#include "engine/StageEngine.h"
#include "model/StageModel.h"
#include "shard/StageShard.h"
#include "train/Sparta.h"
#include "train/StageOptimizer.h"

#include <torch/types.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

namespace tessera::test {

using namespace tessera::gpu;
namespace fs = std::filesystem;

constexpr int kBatch = 4;
constexpr int kSeq = 32;

inline ModelConfig twoStages(CodecKind codec = CodecKind::None) {
    auto config = ModelConfig::preset("tiny").value();
    config.stages = 2;
    config.codec = codec;
    return config;
}

inline StageEngineOptions optionsFor(const ModelConfig& config, int stage, bool keep = true) {
    StageEngineOptions o;
    o.config = config;
    o.stage = stage;
    o.keepActivations = keep;
    o.optimizer.warmupSteps = 0; // full learning rate from the first step: the tests step a few times
    return o;
}

inline std::unique_ptr<StageEngine> engine(const ModelConfig& config, int stage, bool keep = true) {
    auto e = StageEngine::create(optionsFor(config, stage, keep));
    CHECK_MSG(e.ok(), e.message());
    return std::move(e).value();
}

struct Batch {
    std::vector<std::int32_t> ids, targets;
    Bytes idsFrame, targetsFrame;
    torch::Tensor idsTensor, targetsTensor;
};

// Windows of a repeating pattern, so that there is something to learn.
inline Batch makeBatch(std::uint64_t seed) {
    Batch b;
    for (int i = 0; i < kBatch * (kSeq + 1); ++i)
        b.ids.push_back(static_cast<std::int32_t>((i * 7 + seed * 13 + (i / 5) % 3) % 256));
    for (int r = 0; r < kBatch; ++r)
        for (int t = 0; t < kSeq; ++t)
            b.targets.push_back(b.ids[r * (kSeq + 1) + t + 1]);
    std::vector<std::int32_t> inputs;
    for (int r = 0; r < kBatch; ++r)
        for (int t = 0; t < kSeq; ++t)
            inputs.push_back(b.ids[r * (kSeq + 1) + t]);
    b.ids = inputs;
    b.idsFrame = encodeTokens(b.ids, kBatch, kSeq).value();
    b.targetsFrame = encodeTokens(b.targets, kBatch, kSeq).value();
    b.idsTensor = torch::tensor(std::vector<std::int64_t>(b.ids.begin(), b.ids.end())).view({kBatch, kSeq});
    b.targetsTensor =
        torch::tensor(std::vector<std::int64_t>(b.targets.begin(), b.targets.end())).view({kBatch, kSeq});
    return b;
}

// One microbatch through both stages via the facade; returns the loss.
inline double trainMicrobatch(StageEngine& first, StageEngine& last, std::int64_t id, const Batch& b) {
    auto f0 = first.forward(id, b.idsFrame);
    CHECK_MSG(f0.ok(), f0.message());
    auto f1 = last.forward(id, f0->output, b.targetsFrame);
    CHECK_MSG(f1.ok(), f1.message());
    auto b1 = last.backward(id, {});
    CHECK_MSG(b1.ok(), b1.message());
    auto b0 = first.backward(id, b1->gradInput);
    CHECK_MSG(b0.ok(), b0.message());
    CHECK(b1->loss == f1->loss && b1->tokens == kBatch * kSeq);
    return f1->loss;
}

// The engine's weights, read back through a shard into a StageModel of our own.
inline std::map<std::string, torch::Tensor> weightsOf(StageEngine& e, const fs::path& dir) {
    const fs::path file = dir / ("weights-" + std::to_string(e.stage()) + ".safetensors");
    auto manifest = e.saveShard(file, 1, 0);
    CHECK_MSG(manifest.ok(), manifest.message());
    StageModel model(e.config(), e.stage());
    auto loaded = loadStageShard(model, file, &*manifest);
    CHECK_MSG(loaded.ok(), loaded.message());
    std::map<std::string, torch::Tensor> out;
    for (const auto& [name, t] : model.namedParameters())
        out[name] = t.detach().clone();
    return out;
}

inline double worstRelative(const torch::Tensor& a, const torch::Tensor& b) {
    return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

inline std::string shardHash(StageEngine& e, const fs::path& dir) {
    auto manifest = e.saveShard(dir / "probe.safetensors", 1, 0);
    CHECK_MSG(manifest.ok(), manifest.message());
    return manifest->sha256;
}

inline bool mentions(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace tessera::test
