// SPDX-License-Identifier: Apache-2.0
#include "model/ParameterSpec.h"

#include <cmath>

namespace tessera::gpu {

std::int64_t ParameterSpec::numel() const {
    std::int64_t n = 1;
    for (std::int64_t dim : shape)
        n *= dim;
    return n;
}

double initialStddev(std::string_view name, int nLayers) {
    // The fixed embedding of a subspace run has unit RMS too.
    if (name.starts_with("embedding."))
        return 1.0;
    if (name.ends_with(".wo.weight") || name.ends_with(".w2.weight"))
        return 0.02 / std::sqrt(2.0 * nLayers);
    return 0.02;
}

std::vector<ParameterSpec> stageParameters(const ModelConfig& config, int stage) {
    const bool subspace = config.codec == CodecKind::Subspace;
    const std::int64_t d = config.dModel;
    const std::int64_t vocab = config.vocabSize;
    const std::int64_t kv = static_cast<std::int64_t>(config.nKvHeads) * config.headDim();
    const std::int64_t hidden = config.ffnHidden;
    // What writes into the residual stream is k wide in a subspace run (U maps it to d), whose
    // norms are gain-free.
    const std::int64_t out = subspace ? config.subspaceDim() : d;

    std::vector<ParameterSpec> specs;
    const auto gain = [&](std::string name) {
        if (!subspace)
            specs.push_back({std::move(name), {d}, ParameterSpec::Init::Ones, 0});
    };
    // torch::nn::Linear(in, out)'s weight is [out, in].
    const auto matrix = [&](std::string name, std::int64_t rows, std::int64_t columns) {
        const double stddev = initialStddev(name, config.nLayers);
        specs.push_back({std::move(name), {rows, columns}, ParameterSpec::Init::Normal, stddev});
    };

    if (stage == 0)
        matrix("embedding.weight", vocab, subspace ? config.subspaceDim() : d);
    const auto [first, last] = config.stageBlocks(stage);
    for (int b = first; b < last; ++b) {
        // DecoderBlock's modules in registration order: norm1, attn (wq wk wv wo), norm2, mlp (w1 w2 w3).
        const std::string p = "blocks." + std::to_string(b) + ".";
        gain(p + "norm1.weight");
        matrix(p + "attn.wq.weight", d, d);
        matrix(p + "attn.wk.weight", kv, d);
        matrix(p + "attn.wv.weight", kv, d);
        matrix(p + "attn.wo.weight", out, d);
        gain(p + "norm2.weight");
        matrix(p + "mlp.w1.weight", hidden, d);
        matrix(p + "mlp.w2.weight", out, hidden);
        matrix(p + "mlp.w3.weight", hidden, d);
    }
    if (stage == config.stages - 1) {
        gain("norm.weight");
        matrix("head.weight", vocab, d);
    }
    return specs;
}

} // namespace tessera::gpu
