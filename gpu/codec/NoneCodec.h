// SPDX-License-Identifier: Apache-2.0
#pragma once
// NoneCodec: the uncompressed baseline, values as fp32 (exact, default) or bf16.

#include "codec/Codec.h"

namespace tessera::gpu {

// Per token: d·4 (fp32) or d·2 (bf16) bytes, plus the token id (activations only).
// bf16 rounds to nearest: each value comes back within 2^-9 of itself, relatively.
class NoneCodec final : public Codec {
public:
    static Result<std::unique_ptr<NoneCodec>> create(const ModelConfig& config,
                                                     const CodecOptions& options = {});

    CodecKind id() const override { return CodecKind::None; }
    std::string describe() const override;

private:
    NoneCodec(const ModelConfig& config, const CodecOptions& options, Dtype activation, Dtype gradient);

    Layout layout(PayloadKind kind) const override;
    Status checkLayout(const FrameHeader& header) const override;
    std::uint64_t valueBytes(const FrameHeader& header) const override;
    void encodeValues(PayloadKind kind, const torch::Tensor& rows, const torch::Tensor& ids,
                      std::vector<std::uint8_t>& out) const override;
    Result<torch::Tensor> decodeValues(const FrameHeader& header, std::span<const std::uint8_t> values,
                                       const torch::Tensor& ids) const override;

    Dtype m_activation;
    Dtype m_gradient;
};

} // namespace tessera::gpu
