// SPDX-License-Identifier: Apache-2.0
#pragma once
// SubspaceCodec: activations as their k coefficients in the fixed basis U plus the token ids,
// gradients as Uᵀg; the "Protocol Models" boundary (DESIGN.md, Subspace compression).

#include "codec/Codec.h"
#include "model/Subspace.h"

namespace tessera::gpu {

// A subspace model keeps hidden − E[tok] in span(U), so c = Uᵀ(hidden − E[tok]) is all there is
// to send and E[tok] + U·c rebuilds hidden. A gradient g travels as Uᵀg and comes back as
// U·Uᵀg, its projection: exact for everything upstream, whose output only moves within span(U).
// Coefficients travel as int8 with one fp32 scale per token (default; each coefficient within
// max|c_token|/254), fp16 (relative 2^-11; beyond ±65504 becomes inf) or fp32.
// Per token: k·1 + 4 (int8), k·2 (fp16) or k·4 (fp32) bytes, plus the token id for activations.
class SubspaceCodec final : public Codec {
public:
    // Builds U and E from the config's seed (seconds and 2 GiB at the 8b vocabulary).
    static Result<std::unique_ptr<SubspaceCodec>> create(const ModelConfig& config,
                                                         const CodecOptions& options = {});
    // Shares the basis the stage already built (tensors are reference counted, not copied).
    static Result<std::unique_ptr<SubspaceCodec>> create(const ModelConfig& config,
                                                         const CodecOptions& options, SubspaceBasis basis);

    CodecKind id() const override { return CodecKind::Subspace; }
    std::string describe() const override;
    const SubspaceBasis& basis() const { return m_basis; }

private:
    SubspaceCodec(const ModelConfig& config, const CodecOptions& options, SubspaceBasis basis,
                  Dtype activation, Dtype gradient);

    Layout layout(PayloadKind kind) const override;
    Status checkLayout(const FrameHeader& header) const override;
    std::uint64_t valueBytes(const FrameHeader& header) const override;
    void encodeValues(PayloadKind kind, const torch::Tensor& rows, const torch::Tensor& ids,
                      std::vector<std::uint8_t>& out) const override;
    Result<torch::Tensor> decodeValues(const FrameHeader& header, std::span<const std::uint8_t> values,
                                       const torch::Tensor& ids) const override;

    // E[tok] for the ids (flat): the given E's rows, else generated from the seed (fixedEmbeddingRows).
    torch::Tensor embedded(const torch::Tensor& ids) const;
    SubspaceBasis m_basis;  // U [d, k] (and E [vocab, d] when given), fp32, on the options' device
    torch::Tensor m_basisT; // Uᵀ [k, d], contiguous for the decoder's matmul
    Dtype m_activation;
    Dtype m_gradient;
};

} // namespace tessera::gpu
