// SPDX-License-Identifier: Apache-2.0
// StageEngine: the torch-free facade computes what StageModel computes (losses, gradients, the
// optimizer's step), learns, keeps or recomputes alike, restores shards exactly, moves exactly
// the SPARTA partition it is given, refuses bad shards, frames, devices and partitions with an
// Error and leaves its state as it was.
#include "StageEngineTestSupport.h"

using namespace tessera::gpu;
using namespace tessera::test;

// The facade adds only encode/decode: with codec none (fp32) it must give StageModel's numbers.
TESSERA_TEST(matchesStageModelAndLossStartsNearUniform) {
    TempDir dir;
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    StageModel r0(config, 0), r1(config, 1);
    const Batch b = makeBatch(1);

    auto f0 = e0->forward(5, b.idsFrame);
    CHECK_MSG(f0.ok(), f0.message());
    auto f1 = e1->forward(5, f0->output, b.targetsFrame);
    CHECK_MSG(f1.ok(), f1.message());
    CHECK(f1->output.empty() && f1->tokens == kBatch * kSeq && std::isnan(f0->loss));
    CHECK_MSG(std::abs(f1->loss - std::log(256.0)) < 0.3, "initial loss " << f1->loss);

    const auto codec = makeCodec(config).value();
    const torch::Tensor h = r0.forward(b.idsTensor);
    CHECK(torch::equal(codec->decodeActivation(f0->output)->hidden, h));
    auto back1 = e1->backward(5, {});
    CHECK_MSG(back1.ok(), back1.message());
    const BackwardResult ref1 = r1.backward(h, b.targetsTensor);
    CHECK_MSG(std::abs(back1->loss - ref1.loss.item<double>()) <= 1e-6 * back1->loss,
              back1->loss << " vs " << ref1.loss.item<double>());
    const double gradDiff = worstRelative(codec->decodeGradient(back1->gradInput).value(), ref1.gradInput);
    CHECK_MSG(gradDiff <= 1e-6, "gradInput differs by " << gradDiff);
    auto back0 = e0->backward(5, back1->gradInput);
    CHECK_MSG(back0.ok(), back0.message());
    CHECK(back0->gradInput.empty() && std::isnan(back0->loss));
    r0.backward(b.idsTensor, ref1.gradInput);
    CHECK(e0->keptCount() == 0 && e1->accumulatedMicrobatches() == 1);

    // The same AdamW step on the same gradients gives the same weights: the parameter gradients
    // matched too.
    for (auto* pair : {&r0, &r1}) {
        std::vector<torch::Tensor> params;
        for (const auto& [name, t] : pair->namedParameters())
            params.push_back(t);
        OptimizerOptions o;
        o.warmupSteps = 0;
        StageOptimizer(params, o).step(1);
    }
    CHECK(e0->step(1).ok() && e1->step(1).ok() && e0->steps() == 1);
    for (auto [e, r] : {std::pair{e0.get(), &r0}, std::pair{e1.get(), &r1}}) {
        const auto weights = weightsOf(*e, dir.path);
        for (const auto& [name, t] : r->namedParameters()) {
            const double diff = worstRelative(weights.at(name), t);
            CHECK_MSG(diff <= 1e-5, name << " differs by " << diff << " after a step");
        }
    }
}

TESSERA_TEST(stepChangesWeightsAndARepeatedBatchLearns) {
    TempDir dir;
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    const Batch b = makeBatch(2);
    const std::string before = shardHash(*e0, dir.path);
    std::vector<double> losses;
    for (int step = 0; step < 8; ++step) {
        losses.push_back(trainMicrobatch(*e0, *e1, step, b));
        CHECK(e0->step(1).ok() && e1->step(1).ok());
    }
    CHECK(shardHash(*e0, dir.path) != before);
    CHECK_MSG(losses.back() < losses.front() - 1.0, "loss " << losses.front() << " -> " << losses.back());
}

TESSERA_TEST(recomputeBackwardEqualsKeptBackward) {
    TempDir dir;
    const auto config = twoStages();
    auto k0 = engine(config, 0, true), k1 = engine(config, 1, true);
    auto r0 = engine(config, 0, false), r1 = engine(config, 1, false);
    const Batch b = makeBatch(3);
    trainMicrobatch(*k0, *k1, 9, b);

    auto f0 = r0->forward(9, b.idsFrame);
    auto f1 = r1->forward(9, f0->output, b.targetsFrame);
    CHECK(r0->keptCount() == 0 && r1->keptCount() == 0);
    auto missing = r1->backward(9, {}); // nothing kept, no input: it cannot recompute
    CHECK(!missing.ok() && mentions(missing.message(), "forward input"));
    auto b1 = r1->backward(9, {}, f0->output, b.targetsFrame);
    CHECK_MSG(b1.ok(), b1.message());
    CHECK(b1->loss == f1->loss);
    auto b0 = r0->backward(9, b1->gradInput, b.idsFrame);
    CHECK_MSG(b0.ok(), b0.message());

    CHECK(k0->step(1).ok() && k1->step(1).ok() && r0->step(1).ok() && r1->step(1).ok());
    for (auto [kept, recomputed] : {std::pair{k0.get(), r0.get()}, std::pair{k1.get(), r1.get()}}) {
        const auto a = weightsOf(*kept, dir.path), c = weightsOf(*recomputed, dir.path);
        for (const auto& [name, t] : a) {
            const double diff = worstRelative(c.at(name), t);
            CHECK_MSG(diff <= 1e-6, name << " differs by " << diff);
        }
    }

    // A keeping engine recomputes a microbatch whose forward ran elsewhere.
    auto elsewhere = k1->backward(77, {}, f0->output, b.targetsFrame);
    CHECK_MSG(elsewhere.ok(), elsewhere.message());
}

// A probe (synthetic microbatches run inside isolated()) between a real microbatch and the step
// leaves the step exactly as it would have been without it.
TESSERA_TEST(isolatedProbeNeverReachesTheOptimizer) {
    TempDir dir;
    const auto config = twoStages();
    auto a0 = engine(config, 0), a1 = engine(config, 1);
    auto p0 = engine(config, 0), p1 = engine(config, 1);
    const Batch b = makeBatch(5);
    trainMicrobatch(*a0, *a1, 1, b);
    trainMicrobatch(*p0, *p1, 1, b);
    for (StageEngine* e : {p0.get(), p1.get()}) {
        const bool last = e->stage() == 1;
        const Bytes in = e->syntheticInput(2, 16, 9).value();
        const Bytes targets = last ? e->syntheticTargets(2, 16, 10).value() : Bytes{};
        const Bytes grad = last ? Bytes{} : e->syntheticGradient(2, 16, 11).value();
        const tessera::Status s = e->isolated([&]() -> tessera::Status {
            auto f = e->forward(-5, in, targets);
            if (!f)
                return f.error();
            auto g = e->backward(-5, grad, in, targets);
            e->drop(-5);
            return g ? tessera::Status{} : g.error();
        });
        CHECK_MSG(s.ok(), s.message());
        CHECK(e->accumulatedMicrobatches() == 1);
    }
    CHECK(a0->step(1).ok() && a1->step(1).ok() && p0->step(1).ok() && p1->step(1).ok());
    for (auto [plain, probed] : {std::pair{a0.get(), p0.get()}, std::pair{a1.get(), p1.get()}}) {
        const auto x = weightsOf(*plain, dir.path), y = weightsOf(*probed, dir.path);
        for (const auto& [name, t] : x)
            CHECK_MSG(torch::equal(y.at(name), t), name << " moved differently after a probe");
    }
}

TESSERA_TEST(shardRoundTripRestoresExactly) {
    TempDir dir;
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    trainMicrobatch(*e0, *e1, 1, makeBatch(4));
    CHECK(e0->step(1).ok() && e1->step(1).ok());
    auto manifest = e1->saveShard(dir.path / "stage-1.safetensors", 3, 1);
    CHECK_MSG(manifest.ok(), manifest.message());
    CHECK(manifest->stage == 1 && manifest->version == 3 && manifest->step == 1);

    auto fresh = engine(config, 1);
    const std::string freshHash = shardHash(*fresh, dir.path);
    CHECK(freshHash != shardHash(*e1, dir.path));
    auto loaded = fresh->loadShard(dir.path / "stage-1.safetensors", *manifest);
    CHECK_MSG(loaded.ok(), loaded.message());
    CHECK(shardHash(*fresh, dir.path) == shardHash(*e1, dir.path));
    const Batch b = makeBatch(5);
    const Bytes hidden = e0->forward(2, b.idsFrame)->output;
    CHECK(fresh->forward(2, hidden, b.targetsFrame)->loss == e1->forward(2, hidden, b.targetsFrame)->loss);

    // Stage 0's engine refuses stage 1's shard.
    auto wrongStage = e0->loadShard(dir.path / "stage-1.safetensors", *manifest);
    CHECK(!wrongStage.ok() && mentions(wrongStage.message(), "stage"));
}

TESSERA_TEST(tamperedShardFailsAndChangesNothing) {
    TempDir dir;
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    trainMicrobatch(*e0, *e1, 1, makeBatch(6));
    CHECK(e1->step(1).ok());
    const fs::path file = dir.path / "stage-1.safetensors";
    auto manifest = e1->saveShard(file, 2, 1);
    CHECK_MSG(manifest.ok(), manifest.message());
    {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(static_cast<std::streamoff>(manifest->fileSize / 2));
        const char c = static_cast<char>(f.get());
        f.seekp(static_cast<std::streamoff>(manifest->fileSize / 2));
        f.put(static_cast<char>(c ^ 0x01));
    }

    auto target = engine(config, 1);
    const Batch b = makeBatch(7);
    const Bytes hidden = e0->forward(3, b.idsFrame)->output;
    const double lossBefore = target->forward(3, hidden, b.targetsFrame)->loss; // kept under id 3
    const std::string before = shardHash(*target, dir.path);
    auto loaded = target->loadShard(file, *manifest);
    CHECK(!loaded.ok());
    CHECK_MSG(mentions(loaded.message(), "chunk") || mentions(loaded.message(), "SHA"), loaded.message());
    CHECK(shardHash(*target, dir.path) == before && target->keptCount() == 1);
    auto back = target->backward(3, {}); // the kept graph still works: nothing changed
    CHECK_MSG(back.ok(), back.message());
    CHECK(back->loss == lossBefore);

    auto absent = target->loadShard(dir.path / "absent.safetensors", *manifest);
    CHECK(!absent.ok());
}

TESSERA_TEST(malformedInputsAreErrorsNotCrashes) {
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    const Batch b = makeBatch(8);
    const Bytes hidden = e0->forward(1, b.idsFrame)->output;
    const auto refused = [](const auto& result, const std::string& part) {
        CHECK_MSG(!result.ok(), "accepted; expected an error mentioning '" << part << "'");
        CHECK_MSG(mentions(result.message(), part), result.message());
    };

    refused(e0->forward(2, Bytes(b.idsFrame.begin(), b.idsFrame.end() - 1)), "truncated");
    refused(e0->forward(2, hidden), "magic");                     // an activation frame to stage 0
    refused(e1->forward(2, b.idsFrame, b.targetsFrame), "codec"); // a token frame to stage 1
    refused(e0->forward(2, {}), "truncated");
    Bytes badId = b.idsFrame;
    badId[12] = 0x00, badId[13] = 0x01; // id 256
    refused(e0->forward(2, badId), "vocabulary");
    refused(e1->forward(2, hidden), "targets");
    const Bytes shortTargets = encodeTokens(std::vector<std::int32_t>(kBatch * 8, 1), kBatch, 8).value();
    refused(e1->forward(2, hidden, shortTargets), "targets are 4x8");
    CHECK(e0->keptCount() == 1 && e1->keptCount() == 0);

    // Backward: unknown microbatch, a gradient of the wrong shape or kind.
    refused(e0->backward(99, {}), "no activations");
    const Bytes wrongShape = e1->syntheticGradient(kBatch, 8, 1).value();
    refused(e0->backward(1, wrongShape), "4x8");
    refused(e0->backward(1, hidden), "activation");
    refused(e0->backward(1, {}), "missing");
    CHECK(e0->keptCount() == 1); // still there: the right gradient follows
    auto good = e0->backward(1, e1->syntheticGradient(kBatch, kSeq, 1).value());
    CHECK_MSG(good.ok(), good.message());
    refused(e0->backward(1, wrongShape, b.idsFrame), "4x8"); // recompute with a mismatched gradient

    // Every prefix of a valid activation frame, and bytes flipped in its header.
    for (std::size_t n = 0; n < hidden.size(); n += 97)
        CHECK(!e1->forward(3, Bytes(hidden.begin(), hidden.begin() + n), b.targetsFrame).ok());
    for (std::size_t i = 0; i < 28; ++i) {
        Bytes flipped = hidden;
        flipped[i] ^= 0x80;
        CHECK_MSG(!e1->forward(3, flipped, b.targetsFrame).ok(), "flipped header byte " << i);
    }
    CHECK(e1->keptCount() == 0 && e1->accumulatedMicrobatches() == 0);

    refused(e0->step(-1), "non-negative");
    refused(e0->syntheticInput(0, 4, 1), "at least");
    refused(e1->syntheticGradient(1, config.maxSeqLen + 1, 1), "max_seq_len");
}

TESSERA_TEST(unknownDevicesAndBadOptionsAreClearErrors) {
    const auto config = twoStages();
    for (const std::string device : {"cuda:7", "cuda", "tpu", "cuda:", "cuda:x", "cuda:-1", "CPU", ""}) {
        auto options = optionsFor(config, 0);
        options.device = device;
        auto e = StageEngine::create(options);
        CHECK_MSG(!e.ok(), device << " accepted");
        CHECK_MSG(mentions(e.message(), "'" + device + "'"), e.message());
    }
    auto cuda = optionsFor(config, 0);
    cuda.device = "cuda:7";
    const std::string why = StageEngine::create(cuda).message();
    CHECK_MSG(mentions(why, "CUDA"), why);

    auto stage = optionsFor(config, 2);
    CHECK(mentions(StageEngine::create(stage).message(), "stage 2"));
    auto width = optionsFor(config, 0);
    width.config.nHeads = 3;
    CHECK(mentions(StageEngine::create(width).message(), "n_heads"));
    auto lr = optionsFor(config, 0);
    lr.optimizer.learningRate = -1;
    CHECK(!StageEngine::create(lr).ok());
    auto dtype = optionsFor(config, 0);
    dtype.activationDtype = Dtype::I8;
    CHECK(mentions(StageEngine::create(dtype).message(), "codec none"));
}

TESSERA_TEST(stepZeroDoesNotMoveAndDropsKeptGraphs) {
    TempDir dir;
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    trainMicrobatch(*e0, *e1, 1, makeBatch(9));
    const std::string before = shardHash(*e0, dir.path);
    CHECK(e0->forward(2, makeBatch(10).idsFrame).ok());
    e0->drop(2);
    e0->drop(12345); // nothing kept: a no-op
    CHECK(e0->forward(3, makeBatch(10).idsFrame).ok() && e0->keptCount() == 1);
    CHECK(e0->step(0).ok());
    CHECK(e0->keptCount() == 0 && e0->accumulatedMicrobatches() == 0 && e0->steps() == 0);
    CHECK(shardHash(*e0, dir.path) == before);
    // Nothing accumulated: a step with a count does not move either.
    CHECK(e0->step(4).ok() && e0->steps() == 0 && shardHash(*e0, dir.path) == before);
}

TESSERA_TEST(subspaceCodecTrainsThroughTheFacade) {
    const auto config = twoStages(CodecKind::Subspace);
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    const Batch b = makeBatch(11);
    const double loss = trainMicrobatch(*e0, *e1, 1, b);
    CHECK_MSG(std::isfinite(loss) && std::abs(loss - std::log(256.0)) < 1.0, "loss " << loss);
    // The wire is the compressed one: k coefficients per token, not d floats.
    CHECK(e0->forward(2, b.idsFrame)->output.size() < std::size_t(kBatch * kSeq * config.dModel));
    CHECK(mentions(e0->describe(), "subspace"));
}

TESSERA_TEST(syntheticFramesFlopsAndDescription) {
    auto config = ModelConfig::preset("tiny").value(); // 4 stages
    auto middle = engine(config, 1);
    const Bytes input = middle->syntheticInput(kBatch, kSeq, 3).value();
    CHECK(input == middle->syntheticInput(kBatch, kSeq, 3).value());
    CHECK(input != middle->syntheticInput(kBatch, kSeq, 4).value());
    auto f = middle->forward(1, input);
    CHECK_MSG(f.ok(), f.message());
    auto back = middle->backward(1, middle->syntheticGradient(kBatch, kSeq, 3).value());
    CHECK_MSG(back.ok(), back.message());
    CHECK(!back->gradInput.empty());
    CHECK(middle->parameterCount() == config.stageParameterCount(1));

    const std::string d = middle->describe();
    CHECK_MSG(mentions(d, "stage 1/4 of tiny on cpu (fp32)") && mentions(d, "k parameters") &&
                  mentions(d, "codec none"),
              d);
    CHECK(middle->device() == "cpu" && middle->computeDtype() == Dtype::F32);

    CHECK(StageEngine::forwardFlop(410'000, 512) == 2LL * 410'000 * 512);
    CHECK(StageEngine::backwardFlop(410'000, 512) == 4LL * 410'000 * 512);
    CHECK(StageEngine::forwardFlop(-1, 512) == 0 && StageEngine::backwardFlop(5, 0) == 0);
    CHECK(StageEngine::backwardFlop(INT64_MAX / 2, 3) == INT64_MAX);
}
