// SPDX-License-Identifier: Apache-2.0
// A new run's shards, streamed from the parameter specs without building a stage, are byte for byte
// what writing each built StageModel gives (and what earlier versions wrote); the progress adds up;
// a cancelled or failed write leaves no shard behind.
#include "GpuTest.h"
#include "base/Sha256.h"
#include "model/StageModel.h"
#include "shard/AtomicFile.h"
#include "shard/InitialShards.h"
#include "shard/SafetensorsWriter.h"
#include "shard/StageShard.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <unistd.h>

using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

using tessera::test::TempDir;

ModelConfig presetWith(const char* name, CodecKind codec) {
    auto config = ModelConfig::preset(name).value();
    config.codec = codec;
    return config;
}

std::vector<std::string> filesIn(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// Streams the config's shards, then writes each built stage the old way beside them: same bytes,
// same manifests. Returns the streamed files' SHA-256s.
std::vector<std::string> checkStreamedEqualsBuilt(const ModelConfig& config) {
    TempDir streamed;
    TempDir built;
    InitialShardProgress progress;
    const auto manifests = writeInitialShards(config, streamed.path, 3, &progress);
    CHECK_MSG(manifests, manifests.message());
    CHECK(manifests->size() == static_cast<std::size_t>(config.stages));
    std::int64_t total = 0;
    std::vector<std::string> hashes;
    for (int s = 0; s < config.stages; ++s) {
        const std::string name = stageShardFileName(s, 3);
        const ShardManifest& manifest = (*manifests)[static_cast<std::size_t>(s)];
        const auto expected = writeStageShard(StageModel(config, s), built.path / name, 3, 0);
        CHECK_MSG(expected, expected.message());
        CHECK_MSG(manifest.toJson() == expected->toJson(), config.name << " " << codecName(config.codec)
                                                                       << " stage " << s << ": "
                                                                       << manifest.toJson());
        // The manifest describes the file on disk, not only what was fed to the hash.
        const auto reread = sha256FileHex(streamed.path / name);
        CHECK(reread && *reread == manifest.sha256 &&
              fs::file_size(streamed.path / name) == manifest.fileSize);
        CHECK(manifest.file == name && manifest.stage == s && manifest.version == 3 && manifest.step == 0);
        total += static_cast<std::int64_t>(manifest.fileSize);
        hashes.push_back(manifest.sha256);
    }
    CHECK_MSG(progress.bytesTotal == total && progress.bytesWritten == total,
              progress.bytesWritten << " of " << progress.bytesTotal << ", files " << total);
    CHECK(filesIn(streamed.path).size() == static_cast<std::size_t>(config.stages)); // no *.tmp left
    return hashes;
}

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TESSERA_TEST(tinyShardsAreTheBuiltStagesByteForByte) {
    for (CodecKind codec : {CodecKind::None, CodecKind::Int8, CodecKind::Subspace})
        checkStreamedEqualsBuilt(presetWith("tiny", codec));
}

TESSERA_TEST(tinyShardsAreWhatEarlierVersionsWrote) {
    // Written by the StageModel-based writer before shards were streamed: a run created now starts
    // from the same weights as one created then.
    const std::map<CodecKind, std::vector<std::string>> pinned{
        {CodecKind::None,
         {"3b6100d7ddf71ee6288396184d18161250cfac2b12f238bf46d345c36623cda6",
          "5cc414dd0063c1df7a5fe72cefda1414d9202f681d06ecfba4677997e4655d0f",
          "8a1def90c37c0b839f8283afee3c82e38c69d4cf05cde023f844e17ab26a26ee",
          "939195eb72dbc0002e5b95c5cd1b27c24f6365900b0d32fcdde8f8da5dc21683"}},
        {CodecKind::Subspace,
         {"9bae85ee941833aa1c8195e18adc66d6880fbe53b45c5ad19dc4bae3e7253ff8",
          "e045b32fda39766b0382ec463340d522baf625b503039369ee2c2b1f826ae479",
          "fba12dd8787fb714fa1afd9b5375694f86376df108f46f7c640ef831a35da44d",
          "01d4cc267243e4396a530c57f2384f170a58b9151cbe4f956b28fc8dda567019"}}};
    for (const auto& [codec, hashes] : pinned) {
        TempDir dir;
        const auto manifests = writeInitialShards(presetWith("tiny", codec), dir.path, 0);
        CHECK_MSG(manifests, manifests.message());
        for (std::size_t s = 0; s < hashes.size(); ++s)
            CHECK_MSG((*manifests)[s].sha256 == hashes[s], codecName(codec) << " stage " << s);
    }
}

TESSERA_TEST(smallShardsAreTheBuiltStagesByteForByte) {
    // ~125 MB stages: several blocks of the stream and two manifest chunks each.
    for (CodecKind codec : {CodecKind::None, CodecKind::Subspace})
        checkStreamedEqualsBuilt(presetWith("small", codec));
}

TESSERA_TEST(aCancelledWriteLeavesNoShard) {
    const auto config = presetWith("small", CodecKind::None);
    {
        TempDir dir;
        InitialShardProgress progress;
        progress.cancel = true;
        const auto manifests = writeInitialShards(config, dir.path, 1, &progress);
        CHECK(!manifests && manifests.message() == "writing the initial shards was cancelled");
        CHECK(filesIn(dir.path).empty());
    }
    // Cancelled in the middle of stage 1, after stage 0's file was put in place: neither stays.
    TempDir dir;
    InitialShardProgress progress;
    std::jthread canceller([&progress](std::stop_token stop) {
        while (progress.bytesTotal == 0 || progress.bytesWritten < progress.bytesTotal / 4 + (16 << 20)) {
            if (stop.stop_requested())
                return;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        progress.cancel = true;
    });
    const auto manifests = writeInitialShards(config, dir.path, 1, &progress);
    CHECK_MSG(!manifests && manifests.message() == "writing the initial shards was cancelled",
              (manifests ? "finished before the cancel" : manifests.message()));
    CHECK(progress.bytesWritten < progress.bytesTotal);
    const auto left = filesIn(dir.path);
    CHECK_MSG(left.empty(), left.size() << " files left, the first " << left.front());
}

TESSERA_TEST(aDirectoryThatCannotBeMadeIsAnError) {
    TempDir dir;
    std::ofstream(dir.path / "file") << "x";
    const auto manifests =
        writeInitialShards(presetWith("tiny", CodecKind::None), dir.path / "file" / "run", 0);
    CHECK_MSG(!manifests && manifests.message().find("cannot create") != std::string::npos,
              manifests.message());
    auto bad = presetWith("tiny", CodecKind::None);
    bad.nHeads = 3;
    CHECK(!writeInitialShards(bad, dir.path, 0));
}

TESSERA_TEST(aDeclaredLayoutWithItsBytesStreamedIsTheWrittenFile) {
    TempDir dir;
    std::vector<float> a(6, 1.5f);
    std::vector<float> b(4, -2.0f);
    const auto bytesOf = [](const std::vector<float>& v) { return std::as_bytes(std::span(v)); };
    SafetensorsWriter whole;
    CHECK(whole.add("a", Dtype::F32, {2, 3}, bytesOf(a)));
    CHECK(whole.add("b", Dtype::F32, {4}, bytesOf(b)));
    CHECK(whole.setMetadata("k", "v"));
    CHECK(whole.write(dir.path / "whole.safetensors"));

    SafetensorsWriter layout;
    CHECK(layout.declare("a", Dtype::F32, {2, 3}));
    CHECK(layout.declare("b", Dtype::F32, {4}));
    CHECK(!layout.declare("a", Dtype::F32, {1}));
    CHECK(layout.setMetadata("k", "v"));
    CHECK(layout.dataSize() == 40);
    const auto head = layout.fileHead();
    CHECK_MSG(head, head.message());
    auto file = AtomicFile::create(dir.path / "streamed.safetensors");
    CHECK_MSG(file, file.message());
    CHECK(file->append(*head) && file->append(bytesOf(a)) && file->append(bytesOf(b)));
    CHECK(!fs::exists(dir.path / "streamed.safetensors")); // only PATH.tmp until committed
    CHECK(file->commit());
    CHECK(readFile(dir.path / "whole.safetensors") == readFile(dir.path / "streamed.safetensors"));
    CHECK(head->size() + layout.dataSize() == fs::file_size(dir.path / "whole.safetensors"));

    // A writer holding a tensor without data writes nothing.
    const auto refused = layout.write(dir.path / "declared.safetensors");
    CHECK_MSG(!refused && refused.message().find("declared without its data") != std::string::npos,
              refused.message());
    CHECK(!fs::exists(dir.path / "declared.safetensors") &&
          !fs::exists(dir.path / "declared.safetensors.tmp"));
}

TESSERA_TEST(anAtomicFileNotCommittedLeavesNothing) {
    TempDir dir;
    {
        auto file = AtomicFile::create(dir.path / "x.safetensors");
        CHECK_MSG(file, file.message());
        CHECK(file->append(std::string_view("partial")));
        CHECK(fs::exists(dir.path / "x.safetensors.tmp"));
    }
    CHECK(filesIn(dir.path).empty());
    auto file = AtomicFile::create(dir.path / "y.safetensors");
    CHECK(file);
    file->discard();
    CHECK(!file->append(std::string_view("late")) && !file->commit());
    CHECK(filesIn(dir.path).empty());
    CHECK(!AtomicFile::create(dir.path / "missing" / "z.safetensors"));
}
