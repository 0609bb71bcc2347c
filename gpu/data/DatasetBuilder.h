// SPDX-License-Identifier: Apache-2.0
#pragma once
// DatasetBuilder: text files → a token dataset (base/TokenDataset): trains the tokenizer (or takes
// one), cuts each file into blocks of whole lines, holds out a seeded fraction of the blocks,
// tokenizes, writes bounded shards, and writes manifest.json last — a build killed midway leaves no
// manifest, so nothing can train on half a dataset.

#include "base/Result.h"
#include "base/TokenDataset.h"
#include "data/Tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessera::gpu {

struct DatasetBuildOptions {
    std::vector<std::filesystem::path> inputs;      // UTF-8 text files
    std::filesystem::path out;                      // created; must not hold a dataset already
    std::optional<std::filesystem::path> tokenizer; // a trained .model to reuse (else one is trained)
    Tokenizer::TrainOptions training;
    double heldOutFraction = 0.02;
    std::size_t blockBytes = 4096;                    // text blocks the held-out split is drawn in
    std::int64_t shardTokens = 16 * 1024 * 1024;      // tokens per shard file at most
    std::function<void(const std::string&)> progress; // a line per stage of the build (may be empty)
};

Result<TokenDatasetManifest> buildTokenDataset(const DatasetBuildOptions& options);

} // namespace tessera::gpu
