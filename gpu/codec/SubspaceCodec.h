// SPDX-License-Identifier: Apache-2.0
#pragma once
// SubspaceCodec: activations as their k coefficients in the fixed basis U plus the token ids,
// gradients as Uᵀg; the "Protocol Models" boundary (DESIGN.md, Subspace compression).

#include "codec/Codec.h"
#include "model/Subspace.h"

#include <mutex>
#include <vector>

namespace tessera::gpu {

// A subspace model keeps hidden − E[tok] in span(U), so c = Uᵀ(hidden − E[tok]) is all there is
// to send and E[tok] + U·c rebuilds hidden. A gradient g travels as Uᵀg and comes back as
// U·Uᵀg, its projection: exact for everything upstream, whose output only moves within span(U).
// Coefficients travel as int8 with one fp32 scale per token (default; each coefficient within
// max|c_token|/254), fp16 (relative 2^-11; beyond ±65504 becomes inf) or fp32.
// Per token: k·1 + 4 (int8), k·2 (fp16) or k·4 (fp32) bytes, plus the token id for activations.
class SubspaceCodec final : public Codec {
public:
    // Builds U from the config's seed; E's rows are generated for the tokens a frame carries.
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

    // The result checks' rows. A gradient row U·q is q: U's columns are orthonormal, so norms and
    // dot products are q's. An activation row E[t] + U·c is [UᵀE[t] + c, ‖E[t] − UUᵀE[t]‖] (k + 1
    // values): the part of E[t] outside span(U) is the same for every frame of token t, so its norm
    // is all the geometry needs. Norms are exact; the difference and dot product of two frames of the
    // same ids are too (the last coordinate cancels or squares into ‖r_t‖²). No E row, no U·c: k + 1
    // values a token instead of d, and E's rows only for a token this codec has not met before.
    Result<torch::Tensor> checkValues(const FrameHeader& header, std::span<const std::uint8_t> values,
                                      const torch::Tensor& ids) const override;
    // The coefficients c [N, k] fp32 of a payload's value section (int8 scales checked).
    Result<torch::Tensor> coefficientRows(const FrameHeader& header,
                                          std::span<const std::uint8_t> values) const;
    // [UᵀE[t], ‖E[t] − UUᵀE[t]‖] for the ids (flat, CPU): each token's row computed once (21 MB for
    // every token of the 8b vocabulary), then read from m_tokenRows.
    torch::Tensor tokenCheckRows(const torch::Tensor& ids) const;
    // E[tok] for the ids (flat): the given E's rows, else generated from the seed (fixedEmbeddingRows).
    torch::Tensor embedded(const torch::Tensor& ids) const;
    SubspaceBasis m_basis;  // U [d, k] (and E [vocab, d] when given), fp32, on the options' device
    torch::Tensor m_basisT; // Uᵀ [k, d], contiguous for the decoder's matmul
    Dtype m_activation;
    Dtype m_gradient;
    // tokenCheckRows' cache: [vocab, k + 1] on the options' device, a row valid once m_known says so.
    mutable std::mutex m_tokenRowsMutex;
    mutable torch::Tensor m_tokenRows;
    mutable std::vector<bool> m_known;
};

} // namespace tessera::gpu
