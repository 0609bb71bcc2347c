// SPDX-License-Identifier: Apache-2.0
#include "base/ModelConfig.h"

#include "base/Json.h"
#include "base/JsonWriter.h"
#include "base/Sha256.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera::gpu {

std::string_view codecName(CodecKind kind) {
    switch (kind) {
    case CodecKind::None:
        return "none";
    case CodecKind::Int8:
        return "int8";
    case CodecKind::Subspace:
        return "subspace";
    }
    return "?";
}

Result<CodecKind> parseCodec(std::string_view name) {
    for (CodecKind k : {CodecKind::None, CodecKind::Int8, CodecKind::Subspace})
        if (codecName(k) == name)
            return k;
    return makeError("unknown codec '" + std::string(name) + "' (none, int8, subspace)");
}

Result<ModelConfig> ModelConfig::preset(std::string_view name) {
    ModelConfig c;
    if (name == "tiny") {
        // ~1.6M parameters, byte vocabulary: trains on a laptop CPU in seconds.
        c.name = "tiny";
        c.vocabSize = 256;
        c.dModel = 128;
        c.nLayers = 8;
        c.nHeads = 4;
        c.nKvHeads = 2;
        c.ffnHidden = 384;
        c.maxSeqLen = 256;
        c.stages = 4;
        c.subspaceRatio = 8;
    } else if (name == "small") {
        // ~125M parameters (GPT-2 small's size with a Llama block).
        c.name = "small";
        c.vocabSize = 32000;
        c.dModel = 768;
        c.nLayers = 12;
        c.nHeads = 12;
        c.nKvHeads = 4;
        c.ffnHidden = 2048;
        c.maxSeqLen = 1024;
        c.stages = 4;
        c.subspaceRatio = 24;
    } else if (name == "8b") {
        // Pluralis-8B-like: Llama-3-8B's shape in 7 pipeline stages.
        c.name = "8b";
        c.vocabSize = 128256;
        c.dModel = 4096;
        c.nLayers = 32;
        c.nHeads = 32;
        c.nKvHeads = 8;
        c.ffnHidden = 14336;
        c.maxSeqLen = 4096;
        c.ropeTheta = 500000.0;
        c.stages = 7;
        c.subspaceRatio = 100;
    } else {
        return makeError("unknown model preset '" + std::string(name) + "' (tiny, small, 8b)");
    }
    return c;
}

Status ModelConfig::validate() const {
    auto bad = [](const std::string& field, const std::string& why) { return makeError(field + ": " + why); };
    if (vocabSize < 2 || vocabSize > (1 << 24))
        return bad("vocab_size", "must be between 2 and 16777216");
    if (dModel < 8 || dModel > 65536)
        return bad("d_model", "must be between 8 and 65536");
    if (nLayers < 1 || nLayers > 1024)
        return bad("n_layers", "must be between 1 and 1024");
    if (nHeads < 1 || dModel % nHeads != 0)
        return bad("n_heads", "must divide d_model");
    if (headDim() % 2 != 0)
        return bad("n_heads", "head dimension d_model/n_heads must be even (RoPE rotates pairs)");
    if (nKvHeads < 1 || nHeads % nKvHeads != 0)
        return bad("n_kv_heads", "must divide n_heads");
    if (ffnHidden < 1 || ffnHidden > 1 << 20)
        return bad("ffn_hidden", "must be between 1 and 1048576");
    if (maxSeqLen < 1 || maxSeqLen > 1 << 20)
        return bad("max_seq_len", "must be between 1 and 1048576");
    if (!(ropeTheta > 1.0))
        return bad("rope_theta", "must be greater than 1");
    if (!(normEps > 0) || normEps > 1e-1)
        return bad("norm_eps", "must be in (0, 0.1]");
    if (stages < 1 || stages > nLayers)
        return bad("stages", "must be between 1 and n_layers");
    if (subspaceRatio < 1 || subspaceRatio > dModel)
        return bad("subspace_ratio", "must be between 1 and d_model");
    if (momentBits != 32 && momentBits != 8)
        return bad("moment_bits", "must be 32 or 8");
    return {};
}

int ModelConfig::subspaceDim() const {
    return std::max(1, dModel / std::max(1, subspaceRatio));
}

std::int64_t ModelConfig::blockParameterCount() const {
    const std::int64_t d = dModel;
    const std::int64_t kv = static_cast<std::int64_t>(nKvHeads) * headDim();
    // In a subspace run the output projections write k wide (then U maps them to d).
    const std::int64_t out = codec == CodecKind::Subspace ? subspaceDim() : d;
    const std::int64_t attention = d * d + 2 * d * kv + d * out;
    const std::int64_t mlp = 2 * d * ffnHidden + static_cast<std::int64_t>(ffnHidden) * out;
    const std::int64_t norms = codec == CodecKind::Subspace ? 0 : 2 * d;
    return attention + mlp + norms;
}

std::pair<int, int> ModelConfig::stageBlocks(int stage) const {
    // Balance parameters: stage 0 also holds the embedding, the last stage the head, so they
    // get fewer blocks. Boundaries where the running cost crosses s/S of the total.
    const double block = static_cast<double>(blockParameterCount());
    // In a subspace run stage 0's learned embedding is k wide; the head is d wide either way.
    const double embedding =
        static_cast<double>(vocabSize) * (codec == CodecKind::Subspace ? subspaceDim() : dModel);
    const double head = static_cast<double>(vocabSize) * dModel;
    const double total = embedding + head + block * nLayers;
    std::vector<int> bounds(stages + 1, 0);
    bounds[stages] = nLayers;
    for (int s = 1; s < stages; ++s) {
        const double target = total * s / stages - embedding;
        int b = static_cast<int>(std::lround(target / block));
        // Every stage keeps at least one block.
        b = std::clamp(b, bounds[s - 1] + 1, nLayers - (stages - s));
        bounds[s] = b;
    }
    return {bounds[stage], bounds[stage + 1]};
}

std::int64_t ModelConfig::stageParameterCount(int stage) const {
    const auto [first, last] = stageBlocks(stage);
    std::int64_t n = blockParameterCount() * (last - first);
    const std::int64_t embeddingWidth = codec == CodecKind::Subspace ? subspaceDim() : dModel;
    if (stage == 0)
        n += static_cast<std::int64_t>(vocabSize) * embeddingWidth;
    if (stage == stages - 1)
        n += static_cast<std::int64_t>(vocabSize) * dModel + (codec == CodecKind::Subspace ? 0 : dModel);
    return n;
}

std::int64_t ModelConfig::parameterCount() const {
    std::int64_t n = 0;
    for (int s = 0; s < stages; ++s)
        n += stageParameterCount(s);
    return n;
}

std::string ModelConfig::toJson() const {
    // Fixed key order: the hash of this text identifies the model.
    JsonWriter w;
    w.beginObject();
    w.field("name", name);
    w.field("vocab_size", vocabSize);
    w.field("d_model", dModel);
    w.field("n_layers", nLayers);
    w.field("n_heads", nHeads);
    w.field("n_kv_heads", nKvHeads);
    w.field("ffn_hidden", ffnHidden);
    w.field("max_seq_len", maxSeqLen);
    w.field("rope_theta", ropeTheta);
    w.field("norm_eps", normEps);
    w.field("stages", stages);
    w.field("seed", static_cast<std::uint64_t>(seed));
    w.field("codec", codecName(codec));
    w.field("subspace_ratio", subspaceRatio);
    if (momentBits != 32)
        w.field("moment_bits", momentBits);
    w.endObject();
    return w.str();
}

} // namespace tessera::gpu

namespace tessera::gpu {

Result<ModelConfig> ModelConfig::fromJson(std::string_view json) {
    auto doc = parseJson(json);
    if (!doc)
        return makeError("model config: " + doc.message());
    if (!doc->isObject())
        return makeError("model config: not a JSON object");
    static const char* const known[] = {"name",       "vocab_size",     "d_model",    "n_layers",
                                        "n_heads",    "n_kv_heads",     "ffn_hidden", "max_seq_len",
                                        "rope_theta", "norm_eps",       "stages",     "seed",
                                        "codec",      "subspace_ratio", "moment_bits"};
    for (const auto& [key, value] : doc->asObject()) {
        bool ok = false;
        for (const char* k : known)
            ok = ok || key == k;
        if (!ok)
            return makeError("model config: unknown field '" + key + "'");
    }
    ModelConfig c;
    auto name = requireString(*doc, "name");
    if (!name)
        return makeError("model config: " + name.message());
    c.name = *name;
    // Required integers, in the order toJson() writes them.
    struct IntField {
        const char* key;
        int* target;
    };
    for (const IntField& f : {IntField{"vocab_size", &c.vocabSize},
                              {"d_model", &c.dModel},
                              {"n_layers", &c.nLayers},
                              {"n_heads", &c.nHeads},
                              {"n_kv_heads", &c.nKvHeads},
                              {"ffn_hidden", &c.ffnHidden},
                              {"max_seq_len", &c.maxSeqLen},
                              {"stages", &c.stages}}) {
        auto v = requireInt(*doc, f.key, 1, 1 << 24);
        if (!v)
            return makeError("model config: " + v.message());
        *f.target = static_cast<int>(*v);
    }
    auto theta = optionalDouble(*doc, "rope_theta", 1.0, 1e12);
    auto eps = optionalDouble(*doc, "norm_eps", 0.0, 1.0);
    auto seed = optionalInt(*doc, "seed", 0);
    auto codec = optionalString(*doc, "codec");
    auto ratio = optionalInt(*doc, "subspace_ratio", 1, 1 << 24);
    auto moments = optionalInt(*doc, "moment_bits", 8, 32);
    for (const std::string* error :
         {theta ? nullptr : &theta.message(), eps ? nullptr : &eps.message(),
          seed ? nullptr : &seed.message(), codec ? nullptr : &codec.message(),
          ratio ? nullptr : &ratio.message(), moments ? nullptr : &moments.message()})
        if (error)
            return makeError("model config: " + *error);
    if (*theta)
        c.ropeTheta = **theta;
    if (*eps)
        c.normEps = **eps;
    if (*seed)
        c.seed = static_cast<std::uint64_t>(**seed);
    if (*ratio)
        c.subspaceRatio = static_cast<int>(**ratio);
    if (*moments)
        c.momentBits = static_cast<int>(**moments);
    if (*codec) {
        auto kind = parseCodec(**codec);
        if (!kind)
            return makeError("model config: codec: " + kind.message());
        c.codec = *kind;
    }
    if (auto valid = c.validate(); !valid)
        return makeError("model config: " + valid.message());
    return c;
}

std::string ModelConfig::hash() const {
    return sha256Hex(toJson());
}

} // namespace tessera::gpu
