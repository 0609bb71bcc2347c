// SPDX-License-Identifier: Apache-2.0
#include "engine/FrameDecoder.h"

#include "codec/Codec.h"

namespace tessera::gpu {

namespace {

DecodedFrame fromTensor(const torch::Tensor& values, std::int64_t dimension) {
    const torch::Tensor v = values.to(torch::kFloat32).contiguous();
    DecodedFrame out;
    out.batch = v.size(0);
    out.seq = v.size(1);
    out.width = v.size(2);
    out.dimension = dimension;
    const float* data = v.data_ptr<float>();
    out.values.assign(data, data + v.numel());
    return out;
}

Result<DecodedFrame> fromActivation(Result<Activation> a, std::int64_t dimension) {
    if (!a)
        return a.error();
    DecodedFrame out = fromTensor(a->hidden, dimension);
    const torch::Tensor ids = a->tokens.to(torch::kInt64).contiguous();
    out.tokens.assign(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + ids.numel());
    return out;
}

Result<DecodedFrame> fromGradient(Result<torch::Tensor> g, std::int64_t dimension) {
    if (!g)
        return g.error();
    return fromTensor(*g, dimension);
}

} // namespace

FrameDecoder::FrameDecoder(std::unique_ptr<Codec> codec)
    : m_codec(std::move(codec)) {}

FrameDecoder::~FrameDecoder() = default;

Result<std::unique_ptr<FrameDecoder>> FrameDecoder::create(const ModelConfig& config,
                                                           std::int64_t maxTokens) {
    CodecOptions options;
    options.maxTokens = maxTokens;
    try {
        Result<std::unique_ptr<Codec>> codec = makeCodec(config, options);
        if (!codec)
            return codec.error();
        return std::unique_ptr<FrameDecoder>(new FrameDecoder(std::move(*codec)));
    } catch (const std::exception& e) {
        return makeError(std::string("the run's codec: ") + e.what());
    }
}

Result<DecodedFrame> FrameDecoder::decode(std::span<const std::uint8_t> payload, bool activation,
                                          bool forChecks) const {
    const Codec& c = *m_codec;
    const std::int64_t d = c.config().dModel;
    try {
        if (activation)
            return fromActivation(
                forChecks ? c.decodeActivationForChecks(payload) : c.decodeActivation(payload), d);
        return fromGradient(forChecks ? c.decodeGradientForChecks(payload) : c.decodeGradient(payload), d);
    } catch (const std::exception& e) {
        return makeError(std::string("decoding ") + (activation ? "an activation" : "a gradient") +
                             " frame: " + e.what(),
                         ErrorKind::InvalidInput);
    }
}

} // namespace tessera::gpu
