// StageEngine: the torch-free facade computes what StageModel computes (losses, gradients, the
// optimizer's step), learns, keeps or recomputes alike, restores shards exactly, moves exactly
// the SPARTA partition it is given, refuses bad shards, frames, devices and partitions with an
// Error and leaves its state as it was.
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

using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

constexpr int kBatch = 4;
constexpr int kSeq = 32;

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("tessera-stage-engine-" + std::to_string(getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() { fs::remove_all(path); }
};

ModelConfig twoStages(CodecKind codec = CodecKind::None) {
    auto config = ModelConfig::preset("tiny").value();
    config.stages = 2;
    config.codec = codec;
    return config;
}

StageEngineOptions optionsFor(const ModelConfig& config, int stage, bool keep = true) {
    StageEngineOptions o;
    o.config = config;
    o.stage = stage;
    o.keepActivations = keep;
    o.optimizer.warmupSteps = 0; // full learning rate from the first step: the tests step a few times
    return o;
}

std::unique_ptr<StageEngine> engine(const ModelConfig& config, int stage, bool keep = true) {
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
Batch makeBatch(std::uint64_t seed) {
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
double trainMicrobatch(StageEngine& first, StageEngine& last, std::int64_t id, const Batch& b) {
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
std::map<std::string, torch::Tensor> weightsOf(StageEngine& e, const fs::path& dir) {
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

double worstRelative(const torch::Tensor& a, const torch::Tensor& b) {
    return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

std::string shardHash(StageEngine& e, const fs::path& dir) {
    auto manifest = e.saveShard(dir / "probe.safetensors", 1, 0);
    CHECK_MSG(manifest.ok(), manifest.message());
    return manifest->sha256;
}

bool mentions(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

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

// SPARTA through the facade: the partitions of a stage cover each of its weights exactly once,
// and partition -1 is all of them in order.
TESSERA_TEST(spartaPartitionsCoverEveryWeightOnce) {
    TempDir dir;
    const auto config = twoStages();
    auto e = engine(config, 0);
    constexpr int kPartitions = 20;
    const std::int64_t n = e->parameterCount();
    const auto all = e->gatherPartition(-1, kPartitions);
    CHECK_MSG(all.ok(), all.message());
    CHECK(static_cast<std::int64_t>(all->size()) == n && e->partitionSize(-1, kPartitions).value() == n);
    std::vector<float> concatenated;
    std::int64_t sum = 0;
    for (int p = 0; p < kPartitions; ++p) {
        const auto part = e->gatherPartition(p, kPartitions).value();
        CHECK(static_cast<std::int64_t>(part.size()) == e->partitionSize(p, kPartitions).value());
        concatenated.insert(concatenated.end(), part.begin(), part.end());
        sum += static_cast<std::int64_t>(part.size());
    }
    CHECK(sum == n && concatenated == *all);
    // The simulator's partitioning (Sparta over a StageModel's masters with the run's seed).
    StageModel reference(config, 0);
    const Sparta simulated(reference.namedParameters(), config.seed, kPartitions);
    for (const int p : {0, 9, kPartitions - 1}) {
        const torch::Tensor expected = simulated.gather(p);
        const auto got = e->gatherPartition(p, kPartitions).value();
        CHECK_MSG(torch::equal(torch::tensor(got), expected), "partition " << p);
    }

    // Number every weight through partition -1: the shard then holds each number exactly once.
    std::vector<float> ids(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<float>(i);
    auto set = e->setPartition(-1, kPartitions, ids);
    CHECK_MSG(set.ok(), set.message());
    CHECK(e->gatherPartition(-1, kPartitions).value() == ids);
    std::vector<torch::Tensor> flat;
    for (const auto& [name, t] : weightsOf(*e, dir.path))
        flat.push_back(t.reshape({-1}));
    const torch::Tensor sorted = std::get<0>(torch::cat(flat).sort());
    CHECK(torch::equal(sorted, torch::arange(n, torch::kFloat)));
}

// What the coordinator's checkpoint or a ghost does: copy a replica's partition. Only that
// partition then agrees; partition -1 syncs every weight.
TESSERA_TEST(setPartitionCopiesOnlyThatPartition) {
    TempDir dir;
    const auto config = twoStages();
    auto a0 = engine(config, 0), a1 = engine(config, 1);
    trainMicrobatch(*a0, *a1, 1, makeBatch(12));
    CHECK(a0->step(1).ok());
    auto b0 = engine(config, 0); // the initial weights: every partition differs from a0's now
    constexpr int kPartitions = 20, kP = 7;
    const auto values = a0->gatherPartition(kP, kPartitions).value();
    CHECK(b0->gatherPartition(kP, kPartitions).value() != values);
    auto set = b0->setPartition(kP, kPartitions, values);
    CHECK_MSG(set.ok(), set.message());
    for (int p = 0; p < kPartitions; ++p) {
        const bool same =
            a0->gatherPartition(p, kPartitions).value() == b0->gatherPartition(p, kPartitions).value();
        CHECK_MSG(same == (p == kP), "partition " << p << (same ? " agrees" : " differs"));
    }
    CHECK(shardHash(*a0, dir.path) != shardHash(*b0, dir.path));
    CHECK(b0->setPartition(-1, kPartitions, a0->gatherPartition(-1, kPartitions).value()).ok());
    CHECK(shardHash(*a0, dir.path) == shardHash(*b0, dir.path));
}

// w += average − snapshot on partition p only, computed in fp32 as the simulator does.
TESSERA_TEST(partitionDeltaMovesOnlyItsPartition) {
    const auto config = twoStages();
    for (const Dtype dtype : {Dtype::F32, Dtype::BF16}) {
        auto options = optionsFor(config, 1);
        options.computeDtype = dtype;
        auto e = std::move(StageEngine::create(options)).value();
        constexpr int kPartitions = 16, kP = 5;
        const Batch b = makeBatch(13);
        const Bytes hidden = engine(config, 0)->forward(1, b.idsFrame)->output;
        const double lossBefore = e->forward(1, hidden, b.targetsFrame)->loss;

        std::vector<std::vector<float>> before;
        for (int p = 0; p < kPartitions; ++p)
            before.push_back(e->gatherPartition(p, kPartitions).value());
        const auto& snapshot = before[kP];
        std::vector<float> average(snapshot.size());
        for (std::size_t i = 0; i < average.size(); ++i)
            average[i] = snapshot[i] * 0.5f + 0.25f;
        // The replica kept training during the exchange: its weights are no longer the snapshot.
        std::vector<float> moved = snapshot;
        for (float& v : moved)
            v += 0.125f;
        CHECK(e->setPartition(kP, kPartitions, moved).ok());
        auto applied = e->applyPartitionDelta(kP, kPartitions, average, snapshot);
        CHECK_MSG(applied.ok(), applied.message());
        for (int p = 0; p < kPartitions; ++p) {
            const auto after = e->gatherPartition(p, kPartitions).value();
            if (p != kP) {
                CHECK_MSG(after == before[p], "partition " << p << " moved");
                continue;
            }
            CHECK(after.size() == snapshot.size());
            for (std::size_t i = 0; i < after.size(); ++i)
                CHECK_MSG(after[i] == moved[i] + (average[i] - snapshot[i]), "element " << i);
        }
        // The compute weights follow (in bf16 the re-cast copy): the loss changes.
        const double lossAfter = e->forward(2, hidden, b.targetsFrame)->loss;
        CHECK_MSG(lossAfter != lossBefore, dtypeName(dtype) << " loss did not change: " << lossAfter);
    }
}

TESSERA_TEST(badPartitionArgumentsAreErrorsAndChangeNothing) {
    TempDir dir;
    const auto config = twoStages();
    auto e = engine(config, 0);
    const std::string before = shardHash(*e, dir.path);
    const auto refused = [](const auto& result, const std::string& part) {
        CHECK_MSG(!result.ok(), "accepted; expected an error mentioning '" << part << "'");
        CHECK_MSG(mentions(result.message(), part), result.message());
    };
    const std::vector<float> some(100, 1.0f);
    for (const auto& [partition, partitions] :
         {std::pair{20, 20}, std::pair{-2, 20}, std::pair{0, 0}, std::pair{0, 1001}, std::pair{-1, -1}}) {
        const std::string part = partitions < 1 || partitions > 1000 ? "partition count" : "not in [0, 20)";
        refused(e->gatherPartition(partition, partitions), part);
        refused(e->partitionSize(partition, partitions), part);
        refused(e->setPartition(partition, partitions, some), part);
        refused(e->applyPartitionDelta(partition, partitions, some, some), part);
    }
    const std::int64_t size = e->partitionSize(3, 20).value();
    std::vector<float> right(static_cast<std::size_t>(size), 0.5f), longer(right.size() + 1, 0.5f);
    refused(e->setPartition(3, 20, longer), "got " + std::to_string(size + 1) + " values for the weights");
    refused(e->setPartition(3, 20, {}), "got 0 values");
    refused(e->applyPartitionDelta(3, 20, right, longer), "for the snapshot");
    refused(e->applyPartitionDelta(3, 20, longer, right), "for the average");
    refused(e->setPartition(-1, 20, right), "the partition has " + std::to_string(e->parameterCount()));
    std::vector<float> nan = right;
    nan[17] = std::nanf("");
    refused(e->setPartition(3, 20, nan), "non-finite value at index 17 in the weights");
    refused(e->applyPartitionDelta(3, 20, right, nan), "in the snapshot");
    CHECK(shardHash(*e, dir.path) == before);
}

// SPARTA rounds land between a microbatch's forward and its backward: kept graphs still work,
// also when other forwards ran after the new weights arrived. (fp32 compute; in bf16 the re-cast
// of StageModel's compute copies at the next forward still ends the graphs kept before it.)
TESSERA_TEST(keptGraphsBackwardAfterAPartitionDelta) {
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    const Batch b = makeBatch(14);
    auto f0 = e0->forward(1, b.idsFrame);
    auto f1 = e1->forward(1, f0->output, b.targetsFrame);
    CHECK(f0.ok() && f1.ok() && e0->keptCount() == 1 && e1->keptCount() == 1);
    for (StageEngine* e : {e0.get(), e1.get()}) {
        const auto snapshot = e->gatherPartition(-1, 20).value();
        std::vector<float> average = snapshot;
        for (float& v : average)
            v *= 0.9f;
        auto applied = e->applyPartitionDelta(-1, 20, average, snapshot);
        CHECK_MSG(applied.ok(), applied.message());
    }
    CHECK(e0->keptCount() == 1 && e1->keptCount() == 1);
    CHECK(e1->forward(2, e0->forward(2, b.idsFrame)->output, b.targetsFrame).ok());
    auto b1 = e1->backward(1, {});
    CHECK_MSG(b1.ok(), b1.message());
    auto b0 = e0->backward(1, b1->gradInput);
    CHECK_MSG(b0.ok(), b0.message());
    CHECK(e0->accumulatedMicrobatches() == 1 && e1->accumulatedMicrobatches() == 1);
}
