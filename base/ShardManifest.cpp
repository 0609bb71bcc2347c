// SPDX-License-Identifier: Apache-2.0
#include "base/ShardManifest.h"

#include "base/FileRules.h"

#include "base/Json.h"
#include "base/JsonWriter.h"
#include "base/Sha256.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>

namespace tessera::gpu {

namespace {

std::uint64_t chunkCount(std::uint64_t fileSize, std::uint64_t chunkSize) {
    return fileSize / chunkSize + (fileSize % chunkSize != 0);
}

// Streams the file once through the whole-file hash and the per-chunk hashes. onChunk sees each
// chunk's hex digest as soon as it is complete and may stop the pass with an error.
Result<std::uint64_t> hashFile(const std::filesystem::path& path, std::uint64_t chunkSize, std::string& whole,
                               const std::function<Status(std::uint64_t, const std::string&)>& onChunk) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError("cannot open " + path.string());
    Sha256 wholeHash;
    Sha256 chunkHash;
    std::vector<char> buffer(std::min<std::uint64_t>(chunkSize, 1 << 20));
    std::uint64_t total = 0;
    std::uint64_t inChunk = 0;
    std::uint64_t index = 0;
    for (;;) {
        const std::uint64_t want = std::min<std::uint64_t>(buffer.size(), chunkSize - inChunk);
        in.read(buffer.data(), static_cast<std::streamsize>(want));
        const auto got = static_cast<std::uint64_t>(in.gcount());
        const std::string_view bytes(buffer.data(), got);
        wholeHash.update(bytes);
        chunkHash.update(bytes);
        total += got;
        inChunk += got;
        const bool end = got < want;
        if (inChunk == chunkSize || (end && inChunk > 0)) {
            if (Status s = onChunk(index++, Sha256::toHex(chunkHash.final())); !s)
                return makeError(s.message());
            inChunk = 0;
        }
        if (end)
            break;
    }
    if (in.bad())
        return makeError("cannot read " + path.string());
    whole = Sha256::toHex(wholeHash.final());
    return total;
}

} // namespace

Status ShardManifest::validate() const {
    const auto bad = [](const std::string& why) { return makeError("shard manifest: " + why); };
    if (!isSha256Hex(modelConfigHash))
        return bad("field 'model_config_hash' must be 64 lowercase hex characters");
    if (stage < 0 || stage > kMaxStage)
        return bad("field 'stage' must be between 0 and " + std::to_string(kMaxStage));
    if (version < 0 || step < 0)
        return bad("fields 'version' and 'step' must not be negative");
    if (!isPlainFileName(file, ".safetensors"))
        return bad("field 'file' must be a plain file name ending in .safetensors, got '" + file + "'");
    if (fileSize > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return bad("field 'file_size' is out of range");
    if (!isSha256Hex(sha256))
        return bad("field 'sha256' must be 64 lowercase hex characters");
    if (chunkSize < 1 || chunkSize > kMaxChunkSize)
        return bad("field 'chunk_size' must be between 1 and " + std::to_string(kMaxChunkSize));
    const std::uint64_t expected = chunkCount(fileSize, chunkSize);
    if (chunks.size() != expected)
        return bad(std::to_string(chunks.size()) + " chunk hashes for " + std::to_string(fileSize) +
                   " bytes in chunks of " + std::to_string(chunkSize) + ", expected " +
                   std::to_string(expected));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        if (!isSha256Hex(chunks[i]))
            return bad("chunk hash " + std::to_string(i + 1) + " must be 64 lowercase hex characters");
    }
    return {};
}

Result<ShardManifest> ShardManifest::build(const std::filesystem::path& path,
                                           std::string_view modelConfigHash, std::int64_t stage,
                                           std::int64_t version, std::int64_t step, std::uint64_t chunkSize) {
    ShardManifest m;
    m.modelConfigHash = modelConfigHash;
    m.stage = stage;
    m.version = version;
    m.step = step;
    m.file = path.filename().string();
    m.chunkSize = chunkSize;
    if (chunkSize < 1 || chunkSize > kMaxChunkSize)
        return makeError("shard manifest: chunk size must be between 1 and " + std::to_string(kMaxChunkSize));
    Result<std::uint64_t> size =
        hashFile(path, chunkSize, m.sha256, [&](std::uint64_t, const std::string& hex) {
            m.chunks.push_back(hex);
            return Status{};
        });
    if (!size)
        return size.error();
    m.fileSize = *size;
    if (Status s = m.validate(); !s)
        return makeError(s.message());
    return m;
}

std::string ShardManifest::toJson() const {
    JsonWriter w;
    w.beginObject();
    w.field("format", kFormat);
    w.field("model_config_hash", modelConfigHash);
    w.field("stage", stage);
    w.field("version", version);
    w.field("step", step);
    w.field("file", file);
    w.field("file_size", fileSize);
    w.field("sha256", sha256);
    w.field("chunk_size", chunkSize);
    w.key("chunks");
    w.beginArray();
    for (const std::string& c : chunks)
        w.value(c);
    w.endArray();
    if (signature)
        w.field("signature", *signature);
    w.endObject();
    return w.str();
}

Result<ShardManifest> ShardManifest::fromJson(std::string_view text) {
    const auto bad = [](const std::string& why) { return makeError("shard manifest: " + why); };
    Result<JsonValue> root = parseJson(text);
    if (!root)
        return bad(root.message());
    if (!root->isObject())
        return bad("expected a JSON object, got " + std::string(root->typeName()));
    if (Status s =
            rejectUnknownFields(*root, {"format", "model_config_hash", "stage", "version", "step", "file",
                                        "file_size", "sha256", "chunk_size", "chunks", "signature"});
        !s)
        return bad(s.message());
    Result<std::string> format = requireString(*root, "format");
    if (!format)
        return bad(format.message());
    if (*format != kFormat)
        return bad("unsupported format '" + *format + "' (this node reads " + std::string(kFormat) + ")");

    constexpr std::int64_t maxInt = std::numeric_limits<std::int64_t>::max();
    ShardManifest m;
    Result<std::string> hash = requireString(*root, "model_config_hash");
    Result<std::int64_t> stage = requireInt(*root, "stage", 0, kMaxStage);
    Result<std::int64_t> version = requireInt(*root, "version", 0, maxInt);
    Result<std::int64_t> step = requireInt(*root, "step", 0, maxInt);
    Result<std::string> file = requireString(*root, "file");
    Result<std::int64_t> fileSize = requireInt(*root, "file_size", 0, maxInt);
    Result<std::string> sha = requireString(*root, "sha256");
    Result<std::int64_t> chunkSize =
        requireInt(*root, "chunk_size", 1, static_cast<std::int64_t>(kMaxChunkSize));
    Result<const JsonValue*> chunks = requireArray(*root, "chunks");
    Result<std::optional<std::string>> signature = optionalString(*root, "signature");
    // The first failure in document-schema order.
    for (const std::string* error :
         {hash ? nullptr : &hash.message(), stage ? nullptr : &stage.message(),
          version ? nullptr : &version.message(), step ? nullptr : &step.message(),
          file ? nullptr : &file.message(), fileSize ? nullptr : &fileSize.message(),
          sha ? nullptr : &sha.message(), chunkSize ? nullptr : &chunkSize.message(),
          chunks ? nullptr : &chunks.message(), signature ? nullptr : &signature.message()}) {
        if (error)
            return bad(*error);
    }
    m.modelConfigHash = *hash;
    m.stage = *stage;
    m.version = *version;
    m.step = *step;
    m.file = *file;
    m.fileSize = static_cast<std::uint64_t>(*fileSize);
    m.sha256 = *sha;
    m.chunkSize = static_cast<std::uint64_t>(*chunkSize);
    m.signature = *signature;
    for (const JsonValue& c : (*chunks)->asArray()) {
        if (!c.isString())
            return bad("field 'chunks' must hold strings, got " + std::string(c.typeName()));
        m.chunks.push_back(c.asString());
    }
    if (Status s = m.validate(); !s)
        return makeError(s.message());
    return m;
}

Status ShardManifest::verifyFile(const std::filesystem::path& path,
                                 const std::function<Status(std::uint64_t)>& afterChunk) const {
    if (Status s = validate(); !s)
        return s;
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec)
        return makeError("cannot read " + path.string() + ": " + ec.message());
    if (size != fileSize)
        return makeError(path.filename().string() + " is " + std::to_string(size) +
                         " bytes, the manifest says " + std::to_string(fileSize) +
                         " (truncated or incomplete download?)");
    const std::size_t count = chunks.size();
    std::string whole;
    Result<std::uint64_t> hashed =
        hashFile(path, chunkSize, whole, [&](std::uint64_t index, const std::string& hex) -> Status {
            if (index >= count || hex != chunks[index])
                return makeError("chunk " + std::to_string(index + 1) + " of " + std::to_string(count) +
                                 " does not match the manifest (tampered or truncated download?)");
            return afterChunk ? afterChunk(std::min<std::uint64_t>((index + 1) * chunkSize, fileSize))
                              : Status{};
        });
    if (!hashed)
        return makeError(hashed.message());
    if (*hashed != fileSize)
        return makeError(path.filename().string() + " changed size while it was being verified");
    if (whole != sha256)
        return makeError(path.filename().string() + " does not match the manifest's SHA-256");
    return {};
}

} // namespace tessera::gpu
