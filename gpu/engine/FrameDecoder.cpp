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

Result<DecodedFrame> FrameDecoder::activation(std::span<const std::uint8_t> payload) const {
    try {
        return fromActivation(m_codec->decodeActivation(payload), m_codec->config().dModel);
    } catch (const std::exception& e) {
        return makeError(std::string("decoding an activation frame: ") + e.what(), ErrorKind::InvalidInput);
    }
}

Result<DecodedFrame> FrameDecoder::activationForChecks(std::span<const std::uint8_t> payload) const {
    try {
        return fromActivation(m_codec->decodeActivationForChecks(payload), m_codec->config().dModel);
    } catch (const std::exception& e) {
        return makeError(std::string("decoding an activation frame: ") + e.what(), ErrorKind::InvalidInput);
    }
}

Result<DecodedFrame> FrameDecoder::gradient(std::span<const std::uint8_t> payload) const {
    try {
        return fromGradient(m_codec->decodeGradient(payload), m_codec->config().dModel);
    } catch (const std::exception& e) {
        return makeError(std::string("decoding a gradient frame: ") + e.what(), ErrorKind::InvalidInput);
    }
}

Result<DecodedFrame> FrameDecoder::gradientForChecks(std::span<const std::uint8_t> payload) const {
    try {
        return fromGradient(m_codec->decodeGradientForChecks(payload), m_codec->config().dModel);
    } catch (const std::exception& e) {
        return makeError(std::string("decoding a gradient frame: ") + e.what(), ErrorKind::InvalidInput);
    }
}

} // namespace tessera::gpu
