// SPDX-License-Identifier: Apache-2.0
#include "engine/FrameDecoder.h"

#include "codec/Codec.h"

namespace tessera::gpu {

namespace {

DecodedFrame fromTensor(const torch::Tensor& values) {
    const torch::Tensor v = values.to(torch::kFloat32).contiguous();
    DecodedFrame out;
    out.batch = v.size(0);
    out.seq = v.size(1);
    out.width = v.size(2);
    const float* data = v.data_ptr<float>();
    out.values.assign(data, data + v.numel());
    return out;
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
        Result<Activation> a = m_codec->decodeActivation(payload);
        if (!a)
            return a.error();
        DecodedFrame out = fromTensor(a->hidden);
        const torch::Tensor ids = a->tokens.to(torch::kInt64).contiguous();
        out.tokens.assign(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + ids.numel());
        return out;
    } catch (const std::exception& e) {
        return makeError(std::string("decoding an activation frame: ") + e.what(), ErrorKind::InvalidInput);
    }
}

Result<DecodedFrame> FrameDecoder::gradient(std::span<const std::uint8_t> payload) const {
    try {
        Result<torch::Tensor> g = m_codec->decodeGradient(payload);
        if (!g)
            return g.error();
        return fromTensor(*g);
    } catch (const std::exception& e) {
        return makeError(std::string("decoding a gradient frame: ") + e.what(), ErrorKind::InvalidInput);
    }
}

} // namespace tessera::gpu
