// SPDX-License-Identifier: Apache-2.0
#include "codec/Int8Codec.h"

#include "codec/WirePacking.h"

#include <ATen/ATen.h>

namespace tessera::gpu {

namespace {

std::uint64_t blockCount(std::uint64_t values, std::uint64_t block) {
    return (values + block - 1) / block;
}

// [values] -> [blocks, block], zero-padding the last block.
torch::Tensor asBlocks(const torch::Tensor& flat, std::int64_t blocks, std::int64_t block) {
    const std::int64_t pad = blocks * block - flat.numel();
    return (pad ? at::constant_pad_nd(flat, {0, pad}) : flat).view({blocks, block});
}

} // namespace

Result<std::unique_ptr<Int8Codec>> Int8Codec::create(const ModelConfig& config, const CodecOptions& options) {
    if (auto s = checkOptions(config, options); !s)
        return makeError(s.message());
    for (const auto& dtype : {options.activationDtype, options.gradientDtype})
        if (dtype && *dtype != Dtype::I8)
            return makeError("codec int8: values travel as int8 only");
    return std::unique_ptr<Int8Codec>(new Int8Codec(config, options));
}

Int8Codec::Int8Codec(const ModelConfig& config, const CodecOptions& options)
    : Codec(config, options) {}

std::string Int8Codec::describe() const {
    return "int8, blocks of " + std::to_string(options().blockSize) + " values with an fp32 scale";
}

Codec::Layout Int8Codec::layout(PayloadKind) const {
    return {Dtype::I8, 0, static_cast<std::uint32_t>(options().blockSize)};
}

Status Int8Codec::checkLayout(const FrameHeader& header) const {
    if (header.dtype != Dtype::I8)
        return makeError("codec payload 'int8' carries " + std::string(dtypeName(header.dtype)) + " values");
    if (header.rank != 0)
        return makeError("codec payload 'int8' has a subspace rank; it has none");
    if (header.block < 1 || header.block > (1u << 16))
        return makeError("codec payload 'int8' has block size " + std::to_string(header.block) +
                         " (must be between 1 and 65536)");
    return {};
}

std::uint64_t Int8Codec::valueBytes(const FrameHeader& header) const {
    const std::uint64_t values = header.tokens() * header.width;
    return blockCount(values, header.block) * sizeof(float) + values;
}

void Int8Codec::encodeValues(PayloadKind, const torch::Tensor& rows, const torch::Tensor&,
                             std::vector<std::uint8_t>& out) const {
    const std::int64_t values = rows.numel(), block = options().blockSize;
    const auto blocks = static_cast<std::int64_t>(blockCount(values, block));
    const auto q = wire::quantiseRows(asBlocks(rows.view({values}), blocks, block));
    wire::appendTensor(out, q.scales);
    wire::appendTensor(out, q.values.view({blocks * block}).narrow(0, 0, values));
}

Result<torch::Tensor> Int8Codec::decodeValues(const FrameHeader& header, std::span<const std::uint8_t> values,
                                              const torch::Tensor&) const {
    const std::int64_t n = header.tokens(), d = header.width, block = header.block;
    const auto blocks = static_cast<std::int64_t>(blockCount(n * d, block));
    const auto scaleBytes = static_cast<std::size_t>(blocks) * sizeof(float);
    const auto scales = wire::readTensor(values.first(scaleBytes), torch::kFloat, blocks);
    if (!wire::scalesValid(scales))
        return makeError("codec payload 'int8' has a negative, infinite or NaN scale");
    const auto q = wire::readTensor(values.subspan(scaleBytes), torch::kChar, n * d).to(options().device);
    return wire::dequantiseRows(scales.to(options().device), asBlocks(q, blocks, block))
        .view({blocks * block})
        .narrow(0, 0, n * d)
        .view({n, d});
}

} // namespace tessera::gpu
