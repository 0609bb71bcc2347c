// SPDX-License-Identifier: Apache-2.0
#include "data/DatasetBuilder.h"

#include "base/FileRules.h"
#include "base/Sha256.h"
#include "base/SplitMix.h"

#include <fstream>
#include <iterator>

namespace tessera::gpu {

namespace {

namespace fs = std::filesystem;

Status writeFile(const fs::path& path, const std::string& bytes) {
    const fs::path temp = path.string() + ".part";
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.flush();
        if (!out)
            return makeError("could not write " + temp.string() + " (disk full?)");
    }
    std::error_code ec;
    fs::rename(temp, path, ec);
    if (ec)
        return makeError("could not move " + temp.string() + " into place: " + ec.message());
    return {};
}

// Writes tokens as shards named PREFIX-00000.tok, … and lists them.
Result<std::vector<TokenDatasetManifest::File>> writeShards(const fs::path& dir, const std::string& prefix,
                                                            const std::vector<std::int32_t>& tokens,
                                                            int tokenBytes, std::int64_t shardTokens) {
    std::vector<TokenDatasetManifest::File> files;
    for (std::size_t begin = 0; begin < tokens.size(); begin += static_cast<std::size_t>(shardTokens)) {
        const std::size_t end = std::min(tokens.size(), begin + static_cast<std::size_t>(shardTokens));
        char name[64];
        std::snprintf(name, sizeof name, "%s-%05zu.tok", prefix.c_str(), files.size());
        const std::string bytes =
            encodeTokens(std::vector<std::int32_t>(tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                                                   tokens.begin() + static_cast<std::ptrdiff_t>(end)),
                         tokenBytes);
        if (Status s = writeFile(dir / name, bytes); !s)
            return s.error();
        files.push_back({name, bytes.size(), sha256Hex(bytes)});
    }
    return files;
}

std::string plainName(const fs::path& path, std::size_t index) {
    std::string name;
    for (char c : path.filename().string())
        name += isPlainFileNameChar(c) ? c : '_';
    if (name.empty() || name.front() == '.')
        name = "source-" + std::to_string(index) + name;
    return name.substr(0, 200);
}

void say(const DatasetBuildOptions& o, const std::string& line) {
    if (o.progress)
        o.progress(line);
}

// Refuses options out of range and an --out that holds a dataset already; creates --out.
Status checkOptions(const DatasetBuildOptions& o) {
    if (o.inputs.empty())
        return makeError("no text files given");
    if (!(o.heldOutFraction > 0 && o.heldOutFraction < 0.5))
        return makeError("the held-out fraction must be above 0 and below 0.5");
    if (o.blockBytes < 64 || o.shardTokens < 1024)
        return makeError("blocks must be ≥ 64 bytes and shards ≥ 1024 tokens");
    std::error_code ec;
    if (fs::exists(o.out / TokenDatasetManifest::kFileName, ec))
        return makeError((o.out / TokenDatasetManifest::kFileName).string() +
                         " exists: a dataset is never rebuilt in place (a run may have pinned it); choose "
                         "another --out");
    fs::create_directories(o.out, ec);
    if (ec)
        return makeError("could not create " + o.out.string() + ": " + ec.message());
    return {};
}

// Reads every input file whole and lists it among the manifest's sources.
Result<std::vector<std::string>> readSources(const DatasetBuildOptions& o, TokenDatasetManifest& m) {
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < o.inputs.size(); ++i) {
        std::ifstream in(o.inputs[i], std::ios::binary);
        if (!in)
            return makeError("cannot open " + o.inputs[i].string());
        texts.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        m.sources.push_back({plainName(o.inputs[i], i), texts.back().size(), sha256Hex(texts.back())});
    }
    return texts;
}

// Copies the given tokenizer into the dataset (or trains one there), loads it and records it, its
// vocabulary and the token width in the manifest.
Result<std::unique_ptr<Tokenizer>> prepareTokenizer(const DatasetBuildOptions& o, TokenDatasetManifest& m) {
    std::error_code ec;
    const fs::path model = o.out / "tokenizer.model";
    if (o.tokenizer) {
        fs::copy_file(*o.tokenizer, model, fs::copy_options::overwrite_existing, ec);
        if (ec)
            return makeError("could not copy " + o.tokenizer->string() + ": " + ec.message());
    } else {
        say(o, "training a " + std::to_string(o.training.vocabSize) + "-token BPE tokenizer on " +
                   std::to_string(o.inputs.size()) + " file(s)");
        if (Status s = Tokenizer::train(o.inputs, model, o.training); !s)
            return s.error();
    }
    Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::load(model);
    if (!tokenizer)
        return tokenizer.error();
    Result<std::string> modelSha = sha256FileHex(model);
    if (!modelSha)
        return modelSha.error();
    m.tokenizer = {"tokenizer.model", fs::file_size(model), *modelSha};
    m.vocabSize = (*tokenizer)->vocabSize();
    m.tokenBytes = m.vocabSize <= 65536 ? 2 : 4;
    return tokenizer;
}

// Blocks of whole lines; each goes to the held-out split with the given probability (seeded by
// the file and the block, so adding a file does not move another file's split).
Status tokenizeSplits(const DatasetBuildOptions& o, const std::vector<std::string>& texts,
                      Tokenizer& tokenizer, std::vector<std::int32_t>& train,
                      std::vector<std::int32_t>& heldOut) {
    for (std::size_t f = 0; f < texts.size(); ++f) {
        say(o, "tokenizing " + o.inputs[f].string());
        const std::string& text = texts[f];
        std::size_t begin = 0, block = 0;
        while (begin < text.size()) {
            std::size_t end = std::min(text.size(), begin + o.blockBytes);
            const std::size_t newline = text.find('\n', end);
            end = newline == std::string::npos ? text.size() : newline + 1;
            const double u = static_cast<double>(
                                 splitMix64(o.training.seed ^ splitMix64(f * 0x100000001ull + block)) >> 11) /
                             static_cast<double>(1ull << 53);
            Result<std::vector<std::int32_t>> ids =
                tokenizer.encode(std::string_view(text).substr(begin, end - begin));
            if (!ids)
                return makeError(o.inputs[f].string() + ": " + ids.message());
            auto& split = u < o.heldOutFraction ? heldOut : train;
            split.insert(split.end(), ids->begin(), ids->end());
            begin = end;
            ++block;
        }
        train.push_back(tokenizer.endOfText()); // a document ends
    }
    return {};
}

// Writes both splits' shards, then manifest.json last.
Status writeDataset(const DatasetBuildOptions& o, TokenDatasetManifest& m,
                    const std::vector<std::int32_t>& train, const std::vector<std::int32_t>& heldOut) {
    Result<std::vector<TokenDatasetManifest::File>> trainFiles =
        writeShards(o.out, "train", train, m.tokenBytes, o.shardTokens);
    if (!trainFiles)
        return trainFiles.error();
    Result<std::vector<TokenDatasetManifest::File>> heldOutFiles =
        writeShards(o.out, "held-out", heldOut, m.tokenBytes, o.shardTokens);
    if (!heldOutFiles)
        return heldOutFiles.error();
    m.train = *trainFiles;
    m.heldOut = *heldOutFiles;
    if (Status s = m.validate(); !s)
        return s.error();
    if (Status s = writeFile(o.out / TokenDatasetManifest::kFileName, m.toJson()); !s)
        return s.error();
    return {};
}

} // namespace

Result<TokenDatasetManifest> buildTokenDataset(const DatasetBuildOptions& o) {
    if (Status s = checkOptions(o); !s)
        return s.error();
    TokenDatasetManifest m;
    m.heldOutFraction = o.heldOutFraction;
    m.seed = o.training.seed;
    Result<std::vector<std::string>> texts = readSources(o, m);
    if (!texts)
        return texts.error();
    Result<std::unique_ptr<Tokenizer>> tokenizer = prepareTokenizer(o, m);
    if (!tokenizer)
        return tokenizer.error();
    std::vector<std::int32_t> train, heldOut;
    if (Status s = tokenizeSplits(o, *texts, **tokenizer, train, heldOut); !s)
        return s.error();
    if (heldOut.size() < 2 || train.size() < 2)
        return makeError("the text is too short to hold out " + std::to_string(o.heldOutFraction) +
                         " of it in blocks of " + std::to_string(o.blockBytes) +
                         " bytes (give more text, a larger --held-out or a smaller --block)");
    m.trainTokens = static_cast<std::int64_t>(train.size());
    m.heldOutTokens = static_cast<std::int64_t>(heldOut.size());
    say(o, "writing " + std::to_string(train.size()) + " training and " + std::to_string(heldOut.size()) +
               " held-out tokens");
    if (Status s = writeDataset(o, m, train, heldOut); !s)
        return s.error();
    return m;
}

} // namespace tessera::gpu
