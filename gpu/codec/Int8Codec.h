// SPDX-License-Identifier: Apache-2.0
#pragma once
// Int8Codec: blockwise absmax int8 over the flattened [B·T·d] values, one fp32 scale per block.

#include "codec/Codec.h"

namespace tessera::gpu {

// Per token: d bytes plus 4·d/block of scales (+ the token id); 1.06 bytes per value at the
// default block of 64. Each value comes back within absmax(its block)/254: half a step of
// scale = absmax/127. Blocks run across token boundaries; the last one is zero-padded for the
// arithmetic and not sent.
class Int8Codec final : public Codec {
public:
    static Result<std::unique_ptr<Int8Codec>> create(const ModelConfig& config,
                                                     const CodecOptions& options = {});

    CodecKind id() const override { return CodecKind::Int8; }
    std::string describe() const override;

private:
    Int8Codec(const ModelConfig& config, const CodecOptions& options);

    Layout layout(PayloadKind kind) const override;
    Status checkLayout(const FrameHeader& header) const override;
    std::uint64_t valueBytes(const FrameHeader& header) const override;
    void encodeValues(PayloadKind kind, const torch::Tensor& rows, const torch::Tensor& ids,
                      std::vector<std::uint8_t>& out) const override;
    Result<torch::Tensor> decodeValues(const FrameHeader& header, std::span<const std::uint8_t> values,
                                       const torch::Tensor& ids) const override;
};

} // namespace tessera::gpu
