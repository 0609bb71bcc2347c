// SPDX-License-Identifier: Apache-2.0
// A stage's weights survive a trip through a shard file, and a shard that is tampered with,
// truncated, for another stage or for another model is refused without touching the weights.
#include "GpuTest.h"
#include "model/StageModel.h"
#include "shard/StageShard.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

using tessera::test::TempDir;

ModelConfig config() {
    auto c = *ModelConfig::preset("tiny");
    c.nLayers = 4;
    c.stages = 2;
    return c;
}

// A second model of the same stage, made different from the first by training noise.
void perturb(StageModel& model) {
    torch::NoGradGuard noGrad;
    for (auto& [name, p] : model.namedParameters())
        p.add_(torch::randn_like(p) * 0.01);
}

bool sameWeights(StageModel& a, StageModel& b) {
    auto pa = a.namedParameters();
    auto pb = b.namedParameters();
    for (std::size_t i = 0; i < pa.size(); ++i)
        if (pa[i].first != pb[i].first || !torch::equal(pa[i].second, pb[i].second))
            return false;
    return true;
}

void flipByte(const fs::path& file, std::uint64_t offset) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c ^= 0x20;
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
}

} // namespace

TESSERA_TEST(weightsRoundTripThroughAShard) {
    TempDir dir;
    StageModel trained(config(), 1);
    perturb(trained);
    const auto manifest = writeStageShard(trained, dir.path / "stage-1.safetensors", 3, 120, 64 * 1024);
    CHECK_MSG(manifest, manifest.message());
    CHECK(manifest->stage == 1 && manifest->version == 3 && manifest->step == 120);
    CHECK_MSG(manifest->chunks.size() > 1, "several chunks: " << manifest->chunks.size());

    StageModel fresh(config(), 1);
    CHECK(!sameWeights(trained, fresh));
    const auto loaded = loadStageShard(fresh, dir.path / "stage-1.safetensors", &*manifest);
    CHECK_MSG(loaded, loaded.message());
    CHECK(sameWeights(trained, fresh));
    // A piece at a time (1,000 bytes: 250 values, pieces that end inside rows): the same weights.
    StageModel pieces(config(), 1);
    const auto loadedInPieces = loadStageShard(pieces, dir.path / "stage-1.safetensors", &*manifest, 1000);
    CHECK_MSG(loadedInPieces, loadedInPieces.message());
    CHECK(sameWeights(trained, pieces));
    // The loaded model computes what the trained one does.
    const auto hidden = torch::randn({2, 8, config().dModel});
    const auto targets = torch::randint(0, config().vocabSize, {2, 8}, torch::kInt64);
    CHECK(torch::equal(trained.forward(hidden, targets), fresh.forward(hidden, targets)));
}

// Loading holds a piece of a tensor beside the weights, not the tensor: a last stage whose head is
// 128 MiB (a vocabulary of 262,144) raises the process's peak by about one 16 MiB piece (staged
// whole, it raised it by 128 MiB).
TESSERA_TEST(loadingALargeTensorHoldsAPieceOfIt) {
    TempDir dir;
    ModelConfig big = config();
    big.vocabSize = 262'144;
    big.nLayers = 2;
    StageModel written(big, 1);
    const auto manifest = writeStageShard(written, dir.path / "head.safetensors", 1, 0);
    CHECK_MSG(manifest, manifest.message());
    StageModel loaded(big, 1);
    if (!tessera::test::resetPeakResident())
        tessera::test::skip("/proc/self/clear_refs cannot be written here");
    const double base = tessera::test::peakResidentMiB();
    const auto status = loadStageShard(loaded, dir.path / "head.safetensors", &*manifest);
    const double grew = tessera::test::peakResidentMiB() - base;
    CHECK_MSG(status, status.message());
    std::printf("  loading a stage with a 128 MiB head raised the peak by %.1f MiB\n", grew);
    CHECK_MSG(grew < 48, "grew " << grew << " MiB");
    CHECK(sameWeights(written, loaded));
}

TESSERA_TEST(tamperedOrTruncatedShardsAreRefusedAndChangeNothing) {
    TempDir dir;
    const fs::path file = dir.path / "stage-0.safetensors";
    StageModel trained(config(), 0);
    perturb(trained);
    const auto manifest = writeStageShard(trained, file, 1, 10, 64 * 1024);
    CHECK_MSG(manifest, manifest.message());

    StageModel target(config(), 0);
    StageModel untouched(config(), 0);
    flipByte(file, fs::file_size(file) - 100);
    auto loaded = loadStageShard(target, file, &*manifest);
    CHECK(!loaded);
    CHECK_MSG(loaded.message().find("chunk") != std::string::npos, loaded.message());
    CHECK(sameWeights(target, untouched));

    fs::resize_file(file, fs::file_size(file) / 2);
    loaded = loadStageShard(target, file, &*manifest);
    CHECK(!loaded);
    // Without a manifest, the safetensors parser itself finds the truncation.
    loaded = loadStageShard(target, file);
    CHECK_MSG(!loaded && loaded.message().find("truncated") != std::string::npos, loaded.message());
    CHECK(sameWeights(target, untouched));
}

TESSERA_TEST(shardsOfAnotherStageOrModelAreRefused) {
    TempDir dir;
    StageModel stage0(config(), 0);
    const auto manifest = writeStageShard(stage0, dir.path / "s0.safetensors", 1, 0);
    CHECK_MSG(manifest, manifest.message());

    StageModel stage1(config(), 1);
    auto loaded = loadStageShard(stage1, dir.path / "s0.safetensors", &*manifest);
    CHECK_MSG(!loaded && loaded.message().find("stage 0, not stage 1") != std::string::npos,
              loaded.message());
    loaded = loadStageShard(stage1, dir.path / "s0.safetensors");
    CHECK_MSG(!loaded && loaded.message().find("holds stage '0'") != std::string::npos, loaded.message());

    auto other = config();
    other.seed += 1;
    StageModel foreign(other, 0);
    loaded = loadStageShard(foreign, dir.path / "s0.safetensors");
    CHECK_MSG(!loaded && loaded.message().find("another model") != std::string::npos, loaded.message());
}
