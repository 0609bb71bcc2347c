// SPDX-License-Identifier: Apache-2.0
#pragma once
// ModelConfig: one Llama-style decoder (RMSNorm, RoPE, SwiGLU, grouped-query attention), how it
// is cut into pipeline stages, and the codec constraint it trains under. Torch-free.

#include "base/Result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace tessera::gpu {

enum class CodecKind { None, Int8, Subspace };
std::string_view codecName(CodecKind kind);
Result<CodecKind> parseCodec(std::string_view name);

struct ModelConfig {
    std::string name = "tiny";
    int vocabSize = 256; // byte vocabulary for tiny
    int dModel = 128;
    int nLayers = 4;
    int nHeads = 4;
    int nKvHeads = 2;    // grouped-query attention: nHeads % nKvHeads == 0
    int ffnHidden = 384; // SwiGLU hidden width
    int maxSeqLen = 256;
    double ropeTheta = 10000.0;
    double normEps = 1e-5;
    int stages = 1;
    std::uint64_t seed = 1234; // initial weights, and the subspace basis and fixed embedding

    // The boundary codec is part of the model: `subspace` constrains it (output projections
    // in span(U), gain-free norms, a fixed token embedding), so it is chosen per run.
    CodecKind codec = CodecKind::None;
    int subspaceRatio = 100; // k = dModel / ratio (at least 1)

    // AdamW's moments in 32 bits or in 8 (a scale per 256 values: train/StageOptimizer), on every
    // replica and the coordinator's checkpoint alike — replicas that apply the same averaged
    // gradient stay equal only if they keep the same moments — so it is the run's, like the codec.
    // Written to the JSON only when 8: the hashes of runs from before it are unchanged.
    int momentBits = 32;

    static Result<ModelConfig> preset(std::string_view name); // "tiny", "small", "8b"
    static Result<ModelConfig> fromJson(std::string_view json);
    std::string toJson() const;
    // SHA-256 (hex) of toJson(): shards and manifests name the exact model they belong to.
    std::string hash() const;
    // Checks every field's range and the divisibility rules; an error names the field.
    Status validate() const;

    int headDim() const { return dModel / nHeads; }
    int subspaceDim() const;                          // k
    std::pair<int, int> stageBlocks(int stage) const; // [first, last) block indices
    std::int64_t blockParameterCount() const;
    std::int64_t stageParameterCount(int stage) const;
    std::int64_t parameterCount() const;
};

} // namespace tessera::gpu
