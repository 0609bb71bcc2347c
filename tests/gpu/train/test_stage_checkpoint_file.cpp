// SPDX-License-Identifier: Apache-2.0
// The coordinator's checkpoint on disk against an engine holding the same stage: the same SPARTA
// partitions, the same weights after every averaged step (dense and low rank, 32- and 8-bit moments,
// a clipped step), bit for bit, though it works a few hundred values at a time, and the fingerprint it
// takes of them in the same pass is the engine's; a ghost synced from it
// in chunks, with steps landing between them, ends on it to the bit; what it saves loads into an
// engine unchanged; a tampered, foreign or missing shard is refused at open.
#include "../engine/StageEngineTestSupport.h"
#include "shard/InitialShards.h"
#include "train/GradientExchange.h"
#include "train/StageCheckpointFile.h"

#include <cstring>

using namespace tessera::test;

namespace {

constexpr int kPartitions = 20;
constexpr std::int64_t kChunk = 512; // small: every parameter of tiny spans several chunks

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> all(StageEngine& e) {
    auto v = e.gatherPartition(-1, kPartitions);
    CHECK_MSG(v.ok(), v.message());
    return *v;
}

std::vector<float> all(StageCheckpointFile& c) {
    auto v = c.gatherPartition(-1, kPartitions);
    CHECK_MSG(v.ok(), v.message());
    return *v;
}

std::unique_ptr<StageCheckpointFile> openCheckpoint(const ModelConfig& config, int stage,
                                                    const fs::path& file, const ShardManifest& manifest,
                                                    const fs::path& work) {
    auto c = StageCheckpointFile::open(config, stage, file, manifest, work, kChunk);
    CHECK_MSG(c.ok(), c.message());
    return std::move(c).value();
}

void followsAnEngine(const ModelConfig& config, int rank) {
    TempDir dir;
    for (int stage = 0; stage < config.stages; ++stage) {
        auto e = engine(config, stage, false);
        const fs::path file = dir.path / ("stage-" + std::to_string(stage) + ".safetensors");
        auto manifest = e->saveShard(file, 1, 0);
        CHECK_MSG(manifest.ok(), manifest.message());
        auto c = openCheckpoint(config, stage, file, *manifest, dir.path / "work");
        CHECK(c->parameterCount() == e->parameterCount());
        CHECK(c->parameterShapes() == e->parameterShapes());
        for (int p = -1; p < kPartitions; ++p)
            CHECK(c->partitionSize(p, kPartitions).value() == e->partitionSize(p, kPartitions).value());
        const std::vector<float> before = all(*c);
        CHECK(sameBits(before, all(*e)));

        const GradientLayout layout(e->parameterShapes(), rank);
        for (int step = 1; step <= 3; ++step) {
            torch::manual_seed(std::uint64_t(100 * stage + step));
            const torch::Tensor r = torch::randn({layout.resultSize()}) * 0.01;
            const std::vector<float> result(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
            const double clip = step == 2 ? 0.7 : 1.0;
            CHECK_MSG(e->applyGradients(rank, result, true, step, 1e-3, clip).ok(), "engine step " << step);
            WeightFingerprint reference(std::uint64_t(7919 * step + stage));
            const tessera::Status applied = c->applyGradients(rank, result, 1e-3, clip, &reference);
            CHECK_MSG(applied.ok(), applied.message());
            CHECK_MSG(sameBits(all(*c), all(*e)), "stage " << stage << " rank " << rank << " moments "
                                                           << config.momentBits << " step " << step);
            // The fingerprint the checkpoint takes in its pass is the one the engine shows, to the bit.
            auto shown = e->fingerprint(reference.seed());
            CHECK_MSG(shown.ok(), shown.message());
            CHECK(shown->count() == c->parameterCount() && shown->projections() == reference.projections() &&
                  shown->squaredNorm() == reference.squaredNorm() && shown->agrees(reference));
        }
        CHECK(c->steps() == 3);
        CHECK(!sameBits(all(*c), before)); // the steps moved the weights

        // A partition taken from elsewhere (an averaging round) lands where the engine puts it.
        std::vector<float> values(std::size_t(e->partitionSize(7, kPartitions).value()));
        for (std::size_t i = 0; i < values.size(); ++i)
            values[i] = float(i) * 1e-4f;
        CHECK(e->setPartition(7, kPartitions, values).ok());
        CHECK(c->setPartition(7, kPartitions, values).ok());
        CHECK(sameBits(all(*c), all(*e)));
        CHECK(!c->setPartition(7, kPartitions, std::span(values).first(values.size() - 1)).ok());

        // What it saves is a shard an engine loads to the same weights.
        const fs::path saved = dir.path / ("saved-" + std::to_string(stage) + ".safetensors");
        auto savedManifest = c->save(saved, 2, 3);
        CHECK_MSG(savedManifest.ok(), savedManifest.message());
        CHECK(savedManifest->version == 2 && savedManifest->step == 3 && savedManifest->stage == stage);
        auto fresh = engine(config, stage, false);
        const tessera::Status loaded = fresh->loadShard(saved, *savedManifest);
        CHECK_MSG(loaded.ok(), loaded.message());
        CHECK(sameBits(all(*fresh), all(*e)));
    }
}

std::vector<float> optimizers(StageEngine& e) {
    auto v = e.gatherPartition(-1, kPartitions, true);
    CHECK_MSG(v.ok(), v.message());
    return *v;
}

// A ghost takes the checkpoint's state (moments and weights) in chunks while the stage goes on
// stepping: the update of every step reaches it between two chunks, as it reaches every node of the
// stage from the sync's first chunk on (coordinator/training/GradientAverager's observers), and each
// chunk is read from the checkpoint when it is sent. lookAhead: the ghost's weights run ahead of its
// optimizer's by that much of each update (the asynchronous pipeline's), the checkpoint's never.
void syncWithStepsBetweenChunks(double lookAhead) {
    TempDir dir;
    const ModelConfig config = twoStages();
    const int stage = 1;
    auto source = engine(config, stage, false);
    const fs::path file = dir.path / "stage.safetensors";
    auto manifest = source->saveShard(file, 1, 0);
    CHECK_MSG(manifest.ok(), manifest.message());
    auto c = openCheckpoint(config, stage, file, *manifest, dir.path / "work");
    const GradientLayout layout(source->parameterShapes(), 0);
    std::int64_t step = 0;
    const auto nextGradient = [&] {
        torch::manual_seed(std::uint64_t(1000 + ++step));
        // Some values far smaller than the others: AdamW's m/√v is large there on moments that are not
        // the checkpoint's.
        const torch::Tensor r = torch::randn({layout.resultSize()}) * 0.01 *
                                torch::pow(10.0, -3.0 * torch::rand({layout.resultSize()}));
        return std::vector<float>(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
    };
    for (int i = 0; i < 3; ++i) // moments far from zero before the ghost comes
        CHECK(c->applyGradients(0, nextGradient(), 1e-3, 1.0).ok());

    auto ghost = engine(config, stage, false); // its own weights, no moments, no steps
    const std::int64_t total = 3 * c->parameterCount(), chunk = c->parameterCount() / 7 + 13;
    const auto stepBoth = [&] {
        const std::vector<float> g = nextGradient();
        CHECK(c->applyGradients(0, g, 1e-3, 1.0).ok());
        const tessera::Status applied = ghost->applyGradients(0, g, false, step, 1e-3, 1.0, lookAhead);
        CHECK_MSG(applied.ok(), applied.message());
    };
    std::int64_t chunks = 0;
    for (std::int64_t at = 0; at < total; at += chunk, ++chunks) {
        auto values = c->readStateRange(at, std::min(chunk, total - at));
        CHECK_MSG(values.ok(), values.message());
        const tessera::Status taken = ghost->setWeightsRange(at, total, *values);
        CHECK_MSG(taken.ok(), taken.message());
        ghost->setOptimizerSteps(c->steps());
        if (chunks % 3 == 1) // within the first moment's chunks, the second's and the weights'
            stepBoth();
    }
    CHECK(chunks > 18);
    CHECK_MSG(sameBits(all(*c), optimizers(*ghost)), "look-ahead " << lookAhead);
    // Its moments and step count are the checkpoint's too: the next step keeps them equal.
    stepBoth();
    CHECK_MSG(sameBits(all(*c), optimizers(*ghost)), "look-ahead " << lookAhead << ", the step after");
}

} // namespace

TESSERA_TEST(aStateSyncWithStepsBetweenItsChunksEndsOnTheCheckpoint) {
    syncWithStepsBetweenChunks(0);
}

TESSERA_TEST(aStateSyncEndsOnTheCheckpointWhereTheWeightsRunAhead) {
    syncWithStepsBetweenChunks(1.0);
}

TESSERA_TEST(denseStepsEqualAnEnginesToTheBit) {
    followsAnEngine(twoStages(), 0);
}

TESSERA_TEST(eightBitMomentsEqualAnEnginesToTheBit) {
    ModelConfig config = twoStages();
    config.momentBits = 8;
    followsAnEngine(config, 0);
}

TESSERA_TEST(lowRankStepsEqualAnEnginesToTheBit) {
    followsAnEngine(twoStages(), 4);
}

TESSERA_TEST(aTamperedForeignOrMissingShardIsRefused) {
    TempDir dir;
    const ModelConfig config = twoStages();
    auto e = engine(config, 0, false);
    const fs::path file = dir.path / "stage-0.safetensors";
    auto manifest = e->saveShard(file, 1, 0);
    CHECK(manifest.ok());
    auto other = engine(config, 1, false);
    const fs::path otherFile = dir.path / "stage-1.safetensors";
    auto otherManifest = other->saveShard(otherFile, 1, 0);
    CHECK(otherManifest.ok());

    // Another stage's shard, with its own (valid) manifest, offered as stage 0.
    auto foreign = StageCheckpointFile::open(config, 0, otherFile, *otherManifest, dir.path / "work");
    CHECK(!foreign.ok());
    // One byte changed in the data.
    {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(std::streamoff(fs::file_size(file) - 10));
        f.put('\x7f');
    }
    auto tampered = StageCheckpointFile::open(config, 0, file, *manifest, dir.path / "work");
    CHECK(!tampered.ok());
    CHECK_MSG(tampered.message().find("chunk") != std::string::npos ||
                  tampered.message().find("SHA") != std::string::npos,
              tampered.message());
    fs::remove(file);
    CHECK(!StageCheckpointFile::open(config, 0, file, *manifest, dir.path / "work").ok());
}

// The coordinator reads a restart's checkpoints on a worker thread and shows how far it is: the hook
// hears every chunk's bytes, rising to the file's size; an error it returns (the coordinator stopping)
// ends the open at once with those words, and the file opens whole afterwards.
TESSERA_TEST(anOpenReportsEachChunkAndStopsWhenTold) {
    TempDir dir;
    const ModelConfig config = twoStages();
    auto e = engine(config, 0, false);
    const fs::path file = dir.path / "stage-0.safetensors";
    auto saved = e->saveShard(file, 1, 0);
    CHECK(saved.ok());
    // The same file in chunks of 64 KiB: several for tiny's stage.
    auto manifest = ShardManifest::build(file, saved->modelConfigHash, 0, 1, 0, 1 << 16);
    CHECK_MSG(manifest.ok(), manifest.message());
    CHECK_MSG(manifest->chunks.size() >= 3, manifest->chunks.size());
    std::vector<std::uint64_t> heard;
    auto opened = StageCheckpointFile::open(config, 0, file, *manifest, dir.path / "work", kChunk,
                                            [&](std::uint64_t bytes) {
                                                heard.push_back(bytes);
                                                return tessera::Status{};
                                            });
    CHECK_MSG(opened.ok(), opened.message());
    CHECK_MSG(heard.size() == manifest->chunks.size(), heard.size());
    for (std::size_t i = 1; i < heard.size(); ++i)
        CHECK(heard[i] > heard[i - 1]);
    CHECK_MSG(heard.back() == manifest->fileSize, heard.back() << " of " << manifest->fileSize);

    int calls = 0;
    auto stopped = StageCheckpointFile::open(
        config, 0, file, *manifest, dir.path / "work", kChunk, [&](std::uint64_t) -> tessera::Status {
            return ++calls == 2 ? tessera::makeError("stopped by the test") : tessera::Status{};
        });
    CHECK(!stopped.ok());
    CHECK_MSG(stopped.message() == "stopped by the test", stopped.message());
    CHECK_MSG(calls == 2, calls);
    CHECK(StageCheckpointFile::open(config, 0, file, *manifest, dir.path / "work", kChunk).ok());
}

// The small preset's stage 0 (its embedding and first blocks: over 100 MiB of fp32): taking an averaged
// partition, an averaged step and publishing it raise this process's peak memory by a few chunks, not by the
// stage.
TESSERA_TEST(aRefreshStaysWithinAFewChunksOfMemory) {
    TempDir dir;
    ModelConfig config = ModelConfig::preset("small").value();
    auto manifests = writeInitialShards(config, dir.path, 1);
    CHECK_MSG(manifests.ok(), manifests.message());
    constexpr std::int64_t chunk = 1 << 18; // 1 MiB of fp32: the measure stays clear of the allocator's slack
    auto opened = StageCheckpointFile::open(config, 0, dir.path / stageShardFileName(0, 1), manifests->at(0),
                                            dir.path / "work", chunk);
    CHECK_MSG(opened.ok(), opened.message());
    StageCheckpointFile& c = **opened;
    const double stageMiB = double(c.parameterCount()) * 4 / (1 << 20);
    CHECK_MSG(stageMiB > 100, stageMiB);
    const GradientLayout layout(c.parameterShapes(), 0);
    const std::vector<float> result(std::size_t(layout.resultSize()), 1e-3f); // held before the measure
    std::vector<float> partition(std::size_t(c.partitionSize(3, kPartitions).value()), 0.5f);
    if (!resetPeakResident())
        skip("/proc/self/clear_refs cannot be written here");
    const double base = peakResidentMiB();
    CHECK(c.setPartition(3, kPartitions, partition).ok());
    CHECK(c.applyGradients(0, result, 1e-3, 1.0).ok());
    auto saved = c.save(dir.path / "stage-0-v2.safetensors", 2, 1);
    CHECK_MSG(saved.ok(), saved.message());
    const double grew = peakResidentMiB() - base;
    std::printf("  stage %.0f MiB; a partition taken, a step applied and a version saved raised the peak by "
                "%.0f MiB\n",
                stageMiB, grew);
    CHECK_MSG(grew < stageMiB / 4, "grew " << grew << " MiB for a " << stageMiB << " MiB stage");
}
