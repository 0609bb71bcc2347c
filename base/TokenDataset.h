// SPDX-License-Identifier: Apache-2.0
#pragma once
// TokenDataset: real text as training tokens — what `tessera-data build` writes and DataSource's
// "dataset:PATH" reads. A directory holds the tokenizer (a SentencePiece model), the token shards
// (little-endian uint16, or uint32 above 65,536 ids; the training split and the held-out split) and
// manifest.json, which names every file with its size and SHA-256. A run pins the manifest by its
// SHA-256, so the tokenizer and every token it trains on are fixed by one hash. Torch-free.

#include "base/Result.h"
#include "base/TokenStream.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::gpu {

struct TokenDatasetManifest {
    static constexpr std::string_view kFormat = "tessera-token-dataset/1";
    static constexpr std::string_view kFileName = "manifest.json";
    // A shard or a source: a plain file name in the dataset's directory (sources: the name only,
    // where it was read from is not kept), its size in bytes, its SHA-256.
    struct File {
        std::string name;
        std::uint64_t bytes = 0;
        std::string sha256;
    };
    File tokenizer;                   // the SentencePiece model
    std::int64_t vocabSize = 0;       // token ids are < vocabSize
    int tokenBytes = 2;               // 2 (uint16) or 4 (uint32)
    std::vector<File> train, heldOut; // token shards, in stream order
    std::int64_t trainTokens = 0, heldOutTokens = 0;
    std::vector<File> sources;  // the text files the tokens were made from
    double heldOutFraction = 0; // of the text's blocks, chosen by seed
    std::uint64_t seed = 0;

    std::string toJson() const;
    // Strict: every field present and typed, no unknown fields, plain file names, token counts that
    // match the shards' sizes.
    static Result<TokenDatasetManifest> fromJson(std::string_view text);
    Status validate() const;
};

struct TokenDataset {
    TokenDatasetManifest manifest;
    std::string manifestSha256;
    TokenStream train, heldOut; // read from the shards a window at a time, never loaded whole
};

// The manifest's path for PATH: PATH itself when it names a file, else PATH/manifest.json.
std::filesystem::path tokenDatasetManifestPath(const std::filesystem::path& path);
// The bytes of every shard (training and held out) the manifest at tokenDatasetManifestPath(path) names:
// what loadTokenDataset's check reads, known without reading the shards.
Result<std::uint64_t> tokenDatasetShardBytes(const std::filesystem::path& path);
// The SHA-256 of the manifest at tokenDatasetManifestPath(path), without reading the shards.
Result<std::string> tokenDatasetHash(const std::filesystem::path& path);
// Reads the manifest, checks its SHA-256 against `pinned` (when given: the run's), every shard's and
// the tokenizer's size and SHA-256, and every token id against modelVocab, streaming each shard once;
// the error names the file and what differs. afterChunk: as checkTokenFile's, over every shard.
Result<TokenDataset> loadTokenDataset(const std::filesystem::path& path, std::int64_t modelVocab,
                                      const std::optional<std::string>& pinned = std::nullopt,
                                      const CheckHook& afterChunk = {});

// Shard bytes for tokens (little-endian, `tokenBytes` each) and back.
std::string encodeTokens(const std::vector<std::int32_t>& tokens, int tokenBytes);

} // namespace tessera::gpu
