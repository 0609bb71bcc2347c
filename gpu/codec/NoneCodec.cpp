// SPDX-License-Identifier: Apache-2.0
#include "codec/NoneCodec.h"

#include "codec/WirePacking.h"

namespace tessera::gpu {

namespace {

bool supported(Dtype dtype) {
    return dtype == Dtype::F32 || dtype == Dtype::BF16;
}

} // namespace

Result<std::unique_ptr<NoneCodec>> NoneCodec::create(const ModelConfig& config, const CodecOptions& options) {
    if (auto s = checkOptions(config, options); !s)
        return makeError(s.message());
    const Dtype activation = options.activationDtype.value_or(Dtype::F32);
    const Dtype gradient = options.gradientDtype.value_or(Dtype::F32);
    if (!supported(activation) || !supported(gradient))
        return makeError("codec none: values travel as fp32 or bf16");
    return std::unique_ptr<NoneCodec>(new NoneCodec(config, options, activation, gradient));
}

NoneCodec::NoneCodec(const ModelConfig& config, const CodecOptions& options, Dtype activation, Dtype gradient)
    : Codec(config, options)
    , m_activation(activation)
    , m_gradient(gradient) {}

std::string NoneCodec::describe() const {
    return "none, activations " + std::string(dtypeName(m_activation)) + ", gradients " +
           std::string(dtypeName(m_gradient));
}

Codec::Layout NoneCodec::layout(PayloadKind kind) const {
    return {kind == PayloadKind::Activation ? m_activation : m_gradient, 0, 0};
}

Status NoneCodec::checkLayout(const FrameHeader& header) const {
    if (!supported(header.dtype))
        return makeError("codec payload 'none' carries " + std::string(dtypeName(header.dtype)) +
                         " values; it can only carry fp32 or bf16");
    if (header.rank != 0 || header.block != 0)
        return makeError("codec payload 'none' has a subspace rank or block size; it has neither");
    return {};
}

std::uint64_t NoneCodec::valueBytes(const FrameHeader& header) const {
    return header.tokens() * header.width * dtypeSize(header.dtype);
}

void NoneCodec::encodeValues(PayloadKind kind, const torch::Tensor& rows, const torch::Tensor&,
                             std::vector<std::uint8_t>& out) const {
    wire::appendTensor(out, rows.to(wire::scalarType(layout(kind).dtype)));
}

Result<torch::Tensor> NoneCodec::decodeValues(const FrameHeader& header, std::span<const std::uint8_t> values,
                                              const torch::Tensor&) const {
    const std::int64_t n = header.tokens(), d = header.width;
    return wire::readTensor(values, wire::scalarType(header.dtype), n * d)
        .view({n, d})
        .to(options().device, torch::kFloat);
}

} // namespace tessera::gpu
