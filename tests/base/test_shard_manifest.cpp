// SPDX-License-Identifier: Apache-2.0
// ShardManifest catches every way a downloaded shard can differ from what the coordinator
// published, and names where; a manifest itself is read as strictly as a shard.
#include "GpuTest.h"
#include "base/Sha256.h"
#include "base/ShardManifest.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

using tessera::test::TempDir;

const std::string kModelHash = sha256Hex("model config");

bool contains(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

std::string content(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>((i * 131 + 7) & 0xFF);
    return s;
}

fs::path writeShard(const fs::path& dir, std::size_t n) {
    const fs::path path = dir / "stage-1.safetensors";
    std::ofstream(path, std::ios::binary) << content(n);
    return path;
}

void flipByte(const fs::path& path, std::streamoff at) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    char c = 0;
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x01));
}

// The JSON of a valid manifest with one field's raw JSON text replaced.
std::string withField(const ShardManifest& m, const std::string& field, const std::string& json) {
    std::string text = m.toJson();
    const std::string key = "\"" + field + "\":";
    const std::size_t at = text.find(key) + key.size();
    std::size_t end = at;
    int depth = 0;
    bool inString = false;
    for (; end < text.size(); ++end) {
        const char c = text[end];
        if (c == '"')
            inString = !inString;
        if (inString)
            continue;
        if (c == '[')
            ++depth;
        if (c == ']')
            --depth;
        if (depth == 0 && (c == ',' || c == '}'))
            break;
    }
    return text.substr(0, at) + json + text.substr(end);
}

std::string errorOf(const std::string& json) {
    const auto r = ShardManifest::fromJson(json);
    return r ? std::string("(valid)") : r.message();
}

} // namespace

TESSERA_TEST(buildThenVerifyPasses) {
    TempDir dir;
    const fs::path path = writeShard(dir.path, 1000);
    const auto m = ShardManifest::build(path, kModelHash, 1, 3, 1200, 256);
    CHECK_MSG(m.ok(), m.message());
    CHECK(m->file == "stage-1.safetensors");
    CHECK(m->fileSize == 1000);
    CHECK(m->chunks.size() == 4); // 256, 256, 256, 232
    CHECK(m->chunks[0] == sha256Hex(content(1000).substr(0, 256)));
    CHECK(m->chunks[3] == sha256Hex(content(1000).substr(768)));
    CHECK(m->sha256 == sha256Hex(content(1000)));
    const tessera::Status verified = m->verifyFile(path);
    CHECK_MSG(verified.ok(), verified.message());

    // Exact multiples and the empty file have no short last chunk.
    CHECK(ShardManifest::build(writeShard(dir.path, 512), kModelHash, 1, 3, 1200, 256)->chunks.size() == 2);
    CHECK(ShardManifest::build(writeShard(dir.path, 0), kModelHash, 1, 3, 1200, 256)->chunks.empty());
    // The default chunk is 64 MiB: a small file is one chunk, equal to the whole.
    const auto one = ShardManifest::build(writeShard(dir.path, 100), kModelHash, 0, 0, 0);
    CHECK(one->chunkSize == 64ull << 20);
    CHECK(one->chunks.size() == 1 && one->chunks[0] == one->sha256);
}

TESSERA_TEST(jsonRoundTrips) {
    TempDir dir;
    auto m = ShardManifest::build(writeShard(dir.path, 1000), kModelHash, 2, 5, 77, 300);
    CHECK(m.ok());
    const std::string json = m->toJson();
    CHECK_MSG(json.starts_with(R"({"format":"tessera-shard-manifest/1","model_config_hash":")"), json);
    CHECK(!contains(json, "signature"));
    const auto back = ShardManifest::fromJson(json);
    CHECK_MSG(back.ok(), back.message());
    CHECK(back->toJson() == json);
    CHECK(back->stage == 2 && back->version == 5 && back->step == 77 && back->chunkSize == 300);

    m->signature = "opaque-signature";
    const auto signedBack = ShardManifest::fromJson(m->toJson());
    CHECK_MSG(signedBack.ok(), signedBack.message());
    CHECK(signedBack->signature == std::optional<std::string>("opaque-signature"));
    CHECK(signedBack->toJson() == m->toJson());
}

TESSERA_TEST(aFlippedByteNamesItsChunk) {
    TempDir dir;
    const fs::path path = writeShard(dir.path, 1000);
    const auto m = ShardManifest::build(path, kModelHash, 1, 1, 1, 200);
    CHECK(m.ok() && m->chunks.size() == 5);
    flipByte(path, 2 * 200 + 17); // in the third chunk
    CHECK_MSG(m->verifyFile(path).message() ==
                  "chunk 3 of 5 does not match the manifest (tampered or truncated download?)",
              m->verifyFile(path).message());
    flipByte(path, 2 * 200 + 17);
    CHECK(m->verifyFile(path).ok());
    flipByte(path, 999); // the last byte
    CHECK(contains(m->verifyFile(path).message(), "chunk 5 of 5 does not match"));
}

TESSERA_TEST(aTruncatedOrMissingFileFailsOnSize) {
    TempDir dir;
    const fs::path path = writeShard(dir.path, 1000);
    const auto m = ShardManifest::build(path, kModelHash, 1, 1, 1, 200);
    CHECK(m.ok());
    fs::resize_file(path, 999);
    CHECK_MSG(
        m->verifyFile(path).message() ==
            "stage-1.safetensors is 999 bytes, the manifest says 1000 (truncated or incomplete download?)",
        m->verifyFile(path).message());
    fs::remove(path);
    CHECK(contains(m->verifyFile(path).message(), "cannot read"));
    CHECK(!ShardManifest::build(path, kModelHash, 1, 1, 1).ok());
}

TESSERA_TEST(buildChecksItsArguments) {
    TempDir dir;
    const fs::path path = writeShard(dir.path, 10);
    CHECK(contains(ShardManifest::build(path, "abc", 1, 1, 1).message(), "model_config_hash"));
    CHECK(contains(ShardManifest::build(path, kModelHash, -1, 1, 1).message(), "'stage'"));
    CHECK(contains(ShardManifest::build(path, kModelHash, 1, 1, 1, 0).message(), "chunk size"));
    const fs::path other = dir.path / "weights.bin";
    fs::copy_file(path, other);
    CHECK(contains(ShardManifest::build(other, kModelHash, 1, 1, 1).message(),
                   "plain file name ending in .safetensors"));
}

TESSERA_TEST(malformedManifestsAreRejectedClearly) {
    TempDir dir;
    const auto m = ShardManifest::build(writeShard(dir.path, 1000), kModelHash, 1, 1, 1, 300);
    CHECK(m.ok());
    CHECK(errorOf(m->toJson()) == "(valid)");

    CHECK(contains(errorOf("{\"format\":"), "shard manifest: JSON: unexpected end of input"));
    CHECK(errorOf("[]") == "shard manifest: expected a JSON object, got an array");
    CHECK(errorOf(withField(*m, "format", "\"tessera-shard-manifest/2\"")) ==
          "shard manifest: unsupported format 'tessera-shard-manifest/2' (this node reads "
          "tessera-shard-manifest/1)");
    CHECK(errorOf(withField(*m, "stage", "\"1\"")) ==
          "shard manifest: field 'stage' must be an integer between 0 and 1023, got a string");
    CHECK(errorOf(withField(*m, "stage", "1.5")) ==
          "shard manifest: field 'stage' must be an integer between 0 and 1023, got 1.5");
    CHECK(
        contains(errorOf(withField(*m, "version", "-1")), "field 'version' must be an integer >= 0, got -1"));
    CHECK(contains(errorOf(withField(*m, "file_size", "null")),
                   "field 'file_size' must be an integer >= 0, got null"));
    CHECK(contains(errorOf(withField(*m, "chunk_size", "0")),
                   "field 'chunk_size' must be an integer between 1 and"));
    CHECK(contains(errorOf(withField(*m, "chunks", "{}")), "field 'chunks' must be an array, got an object"));
    CHECK(contains(errorOf(withField(*m, "chunks", "[1,2,3,4]")),
                   "field 'chunks' must hold strings, got a number"));
    ShardManifest withSignature = *m;
    withSignature.signature = "x";
    CHECK(
        contains(errorOf(withField(withSignature, "signature", "7")), "field 'signature' must be a string"));
    CHECK(errorOf(withField(withSignature, "signature", "null")) == "(valid)");

    // Hex: exactly 64 lowercase hex characters.
    const std::string upper = "\"" + std::string(64, 'A') + "\"";
    CHECK(errorOf(withField(*m, "sha256", upper)) ==
          "shard manifest: field 'sha256' must be 64 lowercase hex characters");
    CHECK(contains(errorOf(withField(*m, "sha256", "\"" + std::string(63, 'a') + "\"")),
                   "'sha256' must be 64"));
    CHECK(contains(errorOf(withField(*m, "model_config_hash", "\"xyz\"")), "'model_config_hash' must be 64"));
    std::string badChunk = withField(
        *m, "chunks", "[\"" + m->chunks[0] + "\",\"" + m->chunks[1] + "\",\"zz\",\"" + m->chunks[3] + "\"]");
    CHECK(errorOf(badChunk) == "shard manifest: chunk hash 3 must be 64 lowercase hex characters");

    // Chunk count must be ceil(file_size / chunk_size).
    CHECK(errorOf(withField(*m, "chunks", "[\"" + m->chunks[0] + "\"]")) ==
          "shard manifest: 1 chunk hashes for 1000 bytes in chunks of 300, expected 4");
    CHECK(contains(errorOf(withField(*m, "file_size", "1201")),
                   "4 chunk hashes for 1201 bytes in chunks of 300, expected 5"));

    // Missing, unknown and hostile fields.
    std::string missing = m->toJson();
    missing.replace(missing.find("\"step\":"), 6, "\"stop\"");
    CHECK(errorOf(missing) == "shard manifest: unknown field 'stop'");
    CHECK(contains(errorOf(withField(*m, "file", "\"../../etc/passwd.safetensors\"")), "plain file name"));
    CHECK(contains(errorOf(withField(*m, "file", "\".safetensors\"")), "plain file name"));
    CHECK(contains(errorOf(withField(*m, "file", "\"a/b.safetensors\"")), "plain file name"));
    CHECK(
        contains(errorOf("{\"format\":\"tessera-shard-manifest/1\"}"), "missing field 'model_config_hash'"));
}
