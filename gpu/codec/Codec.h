// SPDX-License-Identifier: Apache-2.0
#pragma once
// Codec: how a stage boundary's activations (hidden [B,T,d] + token ids [B,T]) and gradients
// (d loss/d hidden, [B,T,d]) become bytes and back. Internal to gpu/ (includes torch).
//
// Every payload is a FrameHeader (magic "TSC1", codec, kind, dtype, B, T, d, k, block) and a
// body whose exact length follows from it. Decoding checks every header field against the
// run's model (d, k, vocab, max_seq_len) and the options' token limit, and the exact length,
// before it allocates anything; a malformed, truncated or foreign payload is an Error.

#include "base/Dtype.h"
#include "base/ModelConfig.h"
#include "base/Result.h"
#include "codec/FrameHeader.h"

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessera::gpu {

struct Activation {
    torch::Tensor hidden; // [B, T, d] fp32
    torch::Tensor tokens; // [B, T] int64
};

struct CodecOptions {
    // Element type on the wire; nullopt takes the codec's default.
    //   none:     fp32 (default, exact) or bf16
    //   int8:     int8 (blocks of blockSize values, one fp32 scale each)
    //   subspace: int8 (default, one fp32 scale per token), fp16 or fp32 coefficients
    std::optional<Dtype> activationDtype;
    std::optional<Dtype> gradientDtype;
    int blockSize = 64; // int8 codec
    // Most tokens (B·T) one payload may carry. It bounds what decoding allocates: a subspace
    // frame expands ~d/k·4 times, so the payload's own length is no bound.
    std::int64_t maxTokens = 65536;
    // Where the codec computes (projection, quantisation, dequantisation): the device the stage
    // runs on, so only the payload's bytes cross the bus. Payloads are host bytes either way;
    // decoding returns tensors on this device.
    torch::Device device = torch::kCPU;
};

class Codec {
public:
    virtual ~Codec() = default;
    Codec(const Codec&) = delete;
    Codec& operator=(const Codec&) = delete;

    virtual CodecKind id() const = 0;
    // One line for logs and benchmarks, e.g. "subspace k=40, int8 coefficients".
    virtual std::string describe() const = 0;

    // hidden [B,T,d] (any float type, any device), tokens [B,T] integral in [0, vocab). Misuse (shapes,
    // ids, sizes beyond the limits) throws std::invalid_argument: it is a bug, not bad input.
    std::vector<std::uint8_t> encodeActivation(const torch::Tensor& hidden,
                                               const torch::Tensor& tokens) const;
    // The same, appended to `out`: whatever the caller wrote in front (an envelope it fills in
    // later) stays, so the payload is written once, where it will be sent from.
    void encodeActivation(const torch::Tensor& hidden, const torch::Tensor& tokens,
                          std::vector<std::uint8_t>& out) const;
    Result<Activation> decodeActivation(std::span<const std::uint8_t> payload) const;
    // grad [B,T,d]; tokens [B,T] only checks the shape (the previous stage has the ids) and
    // may be undefined. Decoding gives [B,T,d] fp32 on the options' device (token ids on the CPU).
    std::vector<std::uint8_t> encodeGradient(const torch::Tensor& grad, const torch::Tensor& tokens) const;
    void encodeGradient(const torch::Tensor& grad, const torch::Tensor& tokens,
                        std::vector<std::uint8_t>& out) const;
    Result<torch::Tensor> decodeGradient(std::span<const std::uint8_t> payload) const;

    // What the coordinator's result checks read instead of the rows themselves: [N, w] fp32 rows (N =
    // B·T, on the options' device) whose norms, differences and dot products are those of the decoded
    // rows — between frames of the same token ids, which is all the checks compare. Every field and
    // length is checked as decoding does. For most codecs they are the decoded rows (w = d); the
    // subspace codec gives k + 1 coordinates a token (SubspaceCodec: no E row, no U·c).
    Result<Activation> decodeActivationForChecks(std::span<const std::uint8_t> payload) const;
    Result<torch::Tensor> decodeGradientForChecks(std::span<const std::uint8_t> payload) const;

    // Exact length of what encodeActivation/encodeGradient return for a [batch, seq] microbatch
    // (sizes up to the options' token limit, else std::invalid_argument).
    std::uint64_t payloadBytes(PayloadKind kind, std::int64_t batch, std::int64_t seq) const;

    const ModelConfig& config() const { return m_config; }
    const CodecOptions& options() const { return m_options; }
    int tokenBytes() const { return m_tokenBytes; }

protected:
    Codec(const ModelConfig& config, const CodecOptions& options);

    struct Layout {
        Dtype dtype = Dtype::F32;
        std::uint32_t rank = 0;
        std::uint32_t block = 0;
    };
    // What this codec writes for a kind, and whether it can read what a header announces
    // (its dtype, rank and block; the rest the base has checked).
    virtual Layout layout(PayloadKind kind) const = 0;
    virtual Status checkLayout(const FrameHeader& header) const = 0;
    // Length of the body's value section (everything before the token ids).
    virtual std::uint64_t valueBytes(const FrameHeader& header) const = 0;
    // rows: [N, d] fp32 contiguous on the options' device; ids: [N] int64 on the CPU (undefined for
    // gradients).
    virtual void encodeValues(PayloadKind kind, const torch::Tensor& rows, const torch::Tensor& ids,
                              std::vector<std::uint8_t>& out) const = 0;
    // values: exactly valueBytes(header) long. Returns [N, d] fp32 on the options' device.
    virtual Result<torch::Tensor> decodeValues(const FrameHeader& header,
                                               std::span<const std::uint8_t> values,
                                               const torch::Tensor& ids) const = 0;
    // The check rows of decodeActivationForChecks: the decoded rows unless a codec has cheaper ones
    // with the same geometry. Returns [N, w] fp32.
    virtual Result<torch::Tensor> checkValues(const FrameHeader& header, std::span<const std::uint8_t> values,
                                              const torch::Tensor& ids) const {
        return decodeValues(header, values, ids);
    }

    // Shared by the codecs' option checks.
    static Status checkOptions(const ModelConfig& config, const CodecOptions& options);

private:
    enum class Rows { Decoded, ForChecks };
    Result<Activation> activation(std::span<const std::uint8_t> payload, Rows rows) const;
    Result<torch::Tensor> gradient(std::span<const std::uint8_t> payload, Rows rows) const;
    void encode(PayloadKind kind, const torch::Tensor& x, const torch::Tensor& tokens,
                std::vector<std::uint8_t>& out) const;
    Result<FrameHeader> open(std::span<const std::uint8_t> payload, PayloadKind kind) const;
    FrameHeader headerFor(PayloadKind kind, std::int64_t batch, std::int64_t seq) const;

    ModelConfig m_config;
    CodecOptions m_options;
    int m_tokenBytes;
};

// The run's codec (config.codec). A subspace codec derives U and E from the config's seed;
// SubspaceCodec::create takes a basis the stage already built instead.
Result<std::unique_ptr<Codec>> makeCodec(const ModelConfig& config, const CodecOptions& options = {});

} // namespace tessera::gpu
