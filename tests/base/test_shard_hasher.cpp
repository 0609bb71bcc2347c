// SPDX-License-Identifier: Apache-2.0
// A manifest hashed from a shard's bytes as they are written is the one ShardManifest::build makes
// from the finished file, however the bytes are cut into pieces.
#include "GpuTest.h"
#include "base/Sha256.h"
#include "base/ShardHasher.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace tessera;
using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("tessera-shard-hasher-" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() { fs::remove_all(path); }
};

const std::string kModelHash = sha256Hex("model config");

std::string content(std::size_t n) {
    std::string s(n, '\0');
    std::uint64_t x = 88172645463325252ull;
    for (std::size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s[i] = static_cast<char>(x);
    }
    return s;
}

// Hashes `bytes` fed in pieces of the given sizes (cycled), and builds the manifest of the same
// bytes written to a file; the two must agree field for field.
void checkAgainstBuild(const std::string& bytes, std::uint64_t chunkSize,
                       const std::vector<std::size_t>& pieces) {
    TempDir dir;
    const fs::path file = dir.path / "stage-2-v1.safetensors";
    std::ofstream(file, std::ios::binary) << bytes;
    const Result<ShardManifest> built = ShardManifest::build(file, kModelHash, 2, 1, 7, chunkSize);
    CHECK_MSG(built, built.message());

    ShardHasher hasher(chunkSize);
    std::size_t at = 0;
    for (std::size_t i = 0; at < bytes.size(); ++i) {
        const std::size_t n = std::min(pieces[i % pieces.size()], bytes.size() - at);
        hasher.update(std::as_bytes(std::span(bytes.data() + at, n)));
        at += n;
    }
    CHECK(hasher.size() == bytes.size());
    const Result<ShardManifest> streamed = hasher.finish("stage-2-v1.safetensors", kModelHash, 2, 1, 7);
    CHECK_MSG(streamed, streamed.message());
    CHECK_MSG(streamed->toJson() == built->toJson(), streamed->toJson() << " vs " << built->toJson());
}

} // namespace

TESSERA_TEST(piecesOfAnySizeHashAsTheWholeFile) {
    const std::string bytes = content((3 << 20) + 12345); // over the two-thread threshold, several chunks
    checkAgainstBuild(bytes, 1 << 20, {1, 7, 64, 1000});
    checkAgainstBuild(bytes, 1 << 20, {(1 << 20) + 3, 5}); // pieces straddling chunk boundaries
    checkAgainstBuild(bytes, 1 << 20, {1 << 20});          // pieces that are exactly chunks
    checkAgainstBuild(bytes, ShardManifest::kDefaultChunkSize, {(2 << 20) + 1}); // one short chunk
    checkAgainstBuild(content(4096), 4096, {4096});                              // no short last chunk
}

TESSERA_TEST(anEmptyShardHasNoChunks) {
    checkAgainstBuild("", 1024, {1});
    ShardHasher hasher;
    const auto m = hasher.finish("empty.safetensors", kModelHash, 0, 0, 0);
    CHECK_MSG(m, m.message());
    CHECK(m->chunks.empty() && m->fileSize == 0 && m->sha256 == sha256Hex(""));
}

TESSERA_TEST(theHasherStartsOverAfterFinish) {
    ShardHasher hasher(16);
    const std::string a = content(100);
    hasher.update(std::as_bytes(std::span(a.data(), a.size())));
    (void)hasher.finish("a.safetensors", kModelHash, 0, 0, 0);
    const std::string b = content(40);
    hasher.update(std::as_bytes(std::span(b.data(), b.size())));
    const auto m = hasher.finish("b.safetensors", kModelHash, 0, 0, 0);
    CHECK_MSG(m, m.message());
    CHECK(m->fileSize == 40 && m->chunks.size() == 3 && m->sha256 == sha256Hex(b));
}

TESSERA_TEST(badChunkSizesAndNamesAreRefused) {
    ShardHasher zero(0);
    const std::string a = content(10);
    zero.update(std::as_bytes(std::span(a.data(), a.size())));
    const auto refused = zero.finish("a.safetensors", kModelHash, 0, 0, 0);
    CHECK(!refused && refused.message().find("chunk size") != std::string::npos);
    ShardHasher hasher;
    const auto badName = hasher.finish("../a.safetensors", kModelHash, 0, 0, 0);
    CHECK_MSG(!badName && badName.message().find("'file'") != std::string::npos, badName.message());
}
