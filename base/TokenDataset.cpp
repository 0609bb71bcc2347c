// SPDX-License-Identifier: Apache-2.0
#include "base/TokenDataset.h"

#include "base/FileRules.h"

#include "base/Json.h"
#include "base/JsonWriter.h"
#include "base/Sha256.h"

#include <fstream>
#include <iterator>

namespace tessera::gpu {

namespace {

Status validateFile(const TokenDatasetManifest::File& f, std::string_view what) {
    if (!isPlainFileName(f.name))
        return makeError(
            std::string(what) + ": '" + f.name +
            "' is not a plain file name (letters, digits, '.', '_', '-'; not starting with '.')");
    if (!isSha256Hex(f.sha256))
        return makeError(std::string(what) + " " + f.name + ": sha256 must be 64 lowercase hex characters");
    return {};
}

void writeFile(JsonWriter& w, const TokenDatasetManifest::File& f) {
    w.beginObject();
    w.field("name", f.name);
    w.field("bytes", f.bytes);
    w.field("sha256", f.sha256);
    w.endObject();
}

void writeFiles(JsonWriter& w, std::string_view key, const std::vector<TokenDatasetManifest::File>& files) {
    w.key(key);
    w.beginArray();
    for (const auto& f : files)
        writeFile(w, f);
    w.endArray();
}

Result<TokenDatasetManifest::File> readFile(const JsonValue& v, std::string_view what) {
    if (!v.isObject())
        return makeError(std::string(what) + " must be an object");
    if (Status s = rejectUnknownFields(v, {"name", "bytes", "sha256"}); !s)
        return makeError(std::string(what) + ": " + s.message());
    Result<std::string> name = requireString(v, "name");
    Result<std::int64_t> bytes = requireInt(v, "bytes", 0);
    Result<std::string> sha = requireString(v, "sha256");
    if (!name || !bytes || !sha)
        return makeError(std::string(what) + ": " +
                         (!name    ? name.message()
                          : !bytes ? bytes.message()
                                   : sha.message()));
    return TokenDatasetManifest::File{*name, static_cast<std::uint64_t>(*bytes), *sha};
}

Result<std::vector<TokenDatasetManifest::File>> readFiles(const JsonValue& root, std::string_view key) {
    Result<const JsonValue*> array = requireArray(root, key);
    if (!array)
        return array.error();
    std::vector<TokenDatasetManifest::File> out;
    for (const JsonValue& v : (*array)->asArray()) {
        Result<TokenDatasetManifest::File> f =
            readFile(v, std::string(key) + "[" + std::to_string(out.size()) + "]");
        if (!f)
            return f.error();
        out.push_back(*f);
    }
    return out;
}

Result<std::string> readWhole(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError("cannot open " + path.string());
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A file of the dataset: its size, then its SHA-256, as the manifest says.
Status checkSize(const std::filesystem::path& path, const TokenDatasetManifest::File& f) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec)
        return makeError(path.string() + ": " + ec.message());
    if (size != f.bytes)
        return makeError(path.string() + " holds " + std::to_string(size) + " bytes, the manifest says " +
                         std::to_string(f.bytes) + " (truncated or replaced?)");
    return {};
}

Status checkHash(const std::filesystem::path& path, const TokenDatasetManifest::File& f,
                 const std::string& sha) {
    if (sha != f.sha256)
        return makeError(path.string() + "'s SHA-256 is " + sha.substr(0, 12) + "…, the manifest says " +
                         f.sha256.substr(0, 12) + "… (the file changed after the manifest was written)");
    return {};
}

Status checkFile(const std::filesystem::path& dir, const TokenDatasetManifest::File& f) {
    const std::filesystem::path path = dir / f.name;
    if (Status s = checkSize(path, f); !s)
        return s;
    Result<std::string> sha = sha256FileHex(path);
    if (!sha)
        return sha.error();
    return checkHash(path, f, *sha);
}

// Each shard checked in one streamed pass (size, SHA-256, every id below the vocabulary) and named in
// the stream it makes; none is held.
Result<TokenStream> checkShards(const std::filesystem::path& dir,
                                const std::vector<TokenDatasetManifest::File>& files, int width,
                                std::int64_t vocab, const CheckHook& afterChunk) {
    std::vector<TokenStream::Part> parts;
    for (const auto& f : files) {
        const std::filesystem::path path = dir / f.name;
        if (Status s = checkSize(path, f); !s)
            return s.error();
        std::string sha;
        Result<std::int64_t> tokens = checkTokenFile(path, width, vocab, &sha, afterChunk);
        if (!tokens)
            return tokens.error();
        if (Status s = checkHash(path, f, sha); !s)
            return s.error();
        parts.push_back({path, *tokens});
    }
    return TokenStream::files(std::move(parts), width, vocab);
}

} // namespace

Status TokenDatasetManifest::validate() const {
    if (Status s = validateFile(tokenizer, "tokenizer"); !s)
        return s;
    if (vocabSize < 2 || vocabSize > (1 << 24))
        return makeError("vocab_size must be within 2..16777216, got " + std::to_string(vocabSize));
    if (tokenBytes != 2 && tokenBytes != 4)
        return makeError("token_bytes must be 2 or 4, got " + std::to_string(tokenBytes));
    if (tokenBytes == 2 && vocabSize > 65536)
        return makeError("a vocabulary of " + std::to_string(vocabSize) + " does not fit 2-byte tokens");
    if (train.empty() || heldOut.empty())
        return makeError("a dataset needs at least one training and one held-out shard");
    for (const auto* split : {&train, &heldOut}) {
        std::uint64_t bytes = 0;
        for (const File& f : *split) {
            if (Status s = validateFile(f, split == &train ? "train" : "held_out"); !s)
                return s;
            if (f.bytes % static_cast<std::uint64_t>(tokenBytes) != 0)
                return makeError("shard " + f.name + ": " + std::to_string(f.bytes) +
                                 " bytes is not a whole number of " + std::to_string(tokenBytes) +
                                 "-byte tokens");
            bytes += f.bytes;
        }
        const std::int64_t count = split == &train ? trainTokens : heldOutTokens;
        if (bytes != static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(tokenBytes) || count < 2)
            return makeError(std::string(split == &train ? "train_tokens" : "held_out_tokens") + " is " +
                             std::to_string(count) + " but the shards hold " +
                             std::to_string(bytes / tokenBytes) + " (at least 2 needed)");
    }
    for (const File& f : sources)
        if (Status s = validateFile(f, "source"); !s)
            return s;
    if (!(heldOutFraction > 0 && heldOutFraction < 1))
        return makeError("held_out_fraction must be between 0 and 1");
    return {};
}

std::string TokenDatasetManifest::toJson() const {
    JsonWriter w;
    w.beginObject();
    w.field("format", kFormat);
    w.key("tokenizer");
    writeFile(w, tokenizer);
    w.field("vocab_size", vocabSize);
    w.field("token_bytes", tokenBytes);
    w.field("train_tokens", trainTokens);
    w.field("held_out_tokens", heldOutTokens);
    writeFiles(w, "train", train);
    writeFiles(w, "held_out", heldOut);
    writeFiles(w, "sources", sources);
    w.field("held_out_fraction", heldOutFraction);
    w.field("seed", seed);
    w.endObject();
    return w.str() + "\n";
}

Result<TokenDatasetManifest> TokenDatasetManifest::fromJson(std::string_view text) {
    Result<JsonValue> root = parseJson(text);
    if (!root)
        return makeError("dataset manifest: " + root.message());
    const auto fail = [](const std::string& why) { return makeError("dataset manifest: " + why); };
    if (!root->isObject())
        return fail("not a JSON object");
    if (Status s = rejectUnknownFields(*root, {"format", "tokenizer", "vocab_size", "token_bytes",
                                               "train_tokens", "held_out_tokens", "train", "held_out",
                                               "sources", "held_out_fraction", "seed"});
        !s)
        return fail(s.message());
    Result<std::string> format = requireString(*root, "format");
    if (!format || *format != kFormat)
        return fail("format must be \"" + std::string(kFormat) + "\"");
    TokenDatasetManifest m;
    const JsonValue* tokenizer = root->find("tokenizer");
    if (!tokenizer)
        return fail("field 'tokenizer' is missing");
    Result<File> t = readFile(*tokenizer, "tokenizer");
    if (!t)
        return fail(t.message());
    m.tokenizer = *t;
    Result<std::int64_t> vocab = requireInt(*root, "vocab_size");
    Result<std::int64_t> width = requireInt(*root, "token_bytes", 0, 8);
    Result<std::int64_t> trainTokens = requireInt(*root, "train_tokens", 0);
    Result<std::int64_t> heldOutTokens = requireInt(*root, "held_out_tokens", 0);
    Result<double> fraction = requireDouble(*root, "held_out_fraction");
    Result<std::int64_t> seed = requireInt(*root, "seed", 0);
    for (const auto* r : {&vocab, &width, &trainTokens, &heldOutTokens, &seed})
        if (!*r)
            return fail(r->message());
    if (!fraction)
        return fail(fraction.message());
    m.vocabSize = *vocab;
    m.tokenBytes = static_cast<int>(*width);
    m.trainTokens = *trainTokens;
    m.heldOutTokens = *heldOutTokens;
    m.heldOutFraction = *fraction;
    m.seed = static_cast<std::uint64_t>(*seed);
    for (auto [key, files] : {std::pair{"train", &m.train}, std::pair{"held_out", &m.heldOut},
                              std::pair{"sources", &m.sources}}) {
        Result<std::vector<File>> read = readFiles(*root, key);
        if (!read)
            return fail(read.message());
        *files = std::move(*read);
    }
    if (Status s = m.validate(); !s)
        return fail(s.message());
    return m;
}

std::filesystem::path tokenDatasetManifestPath(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) ? path / TokenDatasetManifest::kFileName : path;
}

Result<std::string> tokenDatasetHash(const std::filesystem::path& path) {
    return sha256FileHex(tokenDatasetManifestPath(path));
}

Result<std::uint64_t> tokenDatasetShardBytes(const std::filesystem::path& path) {
    Result<std::string> text = readWhole(tokenDatasetManifestPath(path));
    if (!text)
        return text.error();
    Result<TokenDatasetManifest> m = TokenDatasetManifest::fromJson(*text);
    if (!m)
        return m.error();
    std::uint64_t bytes = 0;
    for (const auto* split : {&m->train, &m->heldOut})
        for (const auto& f : *split)
            bytes += f.bytes;
    return bytes;
}

Result<TokenDataset> loadTokenDataset(const std::filesystem::path& path, std::int64_t modelVocab,
                                      const std::optional<std::string>& pinned, const CheckHook& afterChunk) {
    const std::filesystem::path manifestPath = tokenDatasetManifestPath(path);
    Result<std::string> text = readWhole(manifestPath);
    if (!text)
        return text.error();
    TokenDataset d;
    d.manifestSha256 = sha256Hex(*text);
    if (pinned && *pinned != d.manifestSha256)
        return makeError(
            manifestPath.string() + " changed since the run started: its SHA-256 is " +
            d.manifestSha256.substr(0, 12) + "…, the run pinned " + pinned->substr(0, 12) +
            "… (a run's tokenizer and tokens never change: rebuild the old dataset, or start a new run)");
    Result<TokenDatasetManifest> m = TokenDatasetManifest::fromJson(*text);
    if (!m)
        return makeError(manifestPath.string() + ": " + m.message());
    d.manifest = *m;
    if (m->vocabSize > modelVocab)
        return makeError(manifestPath.string() + ": the tokenizer's vocabulary of " +
                         std::to_string(m->vocabSize) + " does not fit the model's " +
                         std::to_string(modelVocab) + " (train the tokenizer with --vocab " +
                         std::to_string(modelVocab) + " or less)");
    const std::filesystem::path dir = manifestPath.parent_path();
    if (Status s = checkFile(dir, m->tokenizer); !s)
        return s.error();
    Result<TokenStream> train = checkShards(dir, m->train, m->tokenBytes, m->vocabSize, afterChunk);
    if (!train)
        return train.error();
    Result<TokenStream> heldOut = checkShards(dir, m->heldOut, m->tokenBytes, m->vocabSize, afterChunk);
    if (!heldOut)
        return heldOut.error();
    d.train = std::move(*train);
    d.heldOut = std::move(*heldOut);
    return d;
}

std::string encodeTokens(const std::vector<std::int32_t>& tokens, int tokenBytes) {
    std::string out(tokens.size() * static_cast<std::size_t>(tokenBytes), '\0');
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const auto v = static_cast<std::uint32_t>(tokens[i]);
        for (int b = 0; b < tokenBytes; ++b)
            out[i * tokenBytes + b] = static_cast<char>((v >> (8 * b)) & 0xff);
    }
    return out;
}

} // namespace tessera::gpu
