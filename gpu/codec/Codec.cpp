// SPDX-License-Identifier: Apache-2.0
#include "codec/Codec.h"

#include "codec/Int8Codec.h"
#include "codec/NoneCodec.h"
#include "codec/SubspaceCodec.h"
#include "codec/WirePacking.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace tessera::gpu {

namespace {

std::string shapeOf(const torch::Tensor& t) {
    if (!t.defined())
        return "undefined";
    std::string s = "[";
    for (std::int64_t i = 0; i < t.dim(); ++i)
        s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

template <class T>
Result<std::unique_ptr<Codec>> upcast(Result<std::unique_ptr<T>> r) {
    if (!r)
        return r.error();
    return std::unique_ptr<Codec>(std::move(r).value());
}

} // namespace

Codec::Codec(const ModelConfig& config, const CodecOptions& options)
    : m_config(config)
    , m_options(options)
    , m_tokenBytes(wire::tokenBytesFor(config.vocabSize)) {}

Status Codec::checkOptions(const ModelConfig& config, const CodecOptions& options) {
    if (auto s = config.validate(); !s)
        return makeError("codec: model config: " + s.message());
    if (options.maxTokens < 1 || options.maxTokens > (std::int64_t(1) << 24))
        return makeError("codec: max tokens per payload must be between 1 and 16777216");
    if (options.blockSize < 1 || options.blockSize > (1 << 16))
        return makeError("codec: int8 block size must be between 1 and 65536");
    return {};
}

FrameHeader Codec::headerFor(PayloadKind kind, std::int64_t batch, std::int64_t seq) const {
    const Layout l = layout(kind);
    FrameHeader h;
    h.codec = id();
    h.kind = kind;
    h.dtype = l.dtype;
    h.tokenBytes = static_cast<std::uint8_t>(kind == PayloadKind::Activation ? m_tokenBytes : 0);
    h.batch = static_cast<std::uint32_t>(batch);
    h.seq = static_cast<std::uint32_t>(seq);
    h.width = static_cast<std::uint32_t>(m_config.dModel);
    h.rank = l.rank;
    h.block = l.block;
    return h;
}

std::uint64_t Codec::payloadBytes(PayloadKind kind, std::int64_t batch, std::int64_t seq) const {
    if (batch < 0 || seq < 0 || batch > m_options.maxTokens || seq > m_options.maxTokens)
        throw std::invalid_argument("codec: payloadBytes of a microbatch beyond the token limit");
    const FrameHeader h = headerFor(kind, batch, seq);
    return FrameHeader::kSize + valueBytes(h) + h.tokens() * h.tokenBytes;
}

void Codec::encode(PayloadKind kind, const torch::Tensor& x, const torch::Tensor& tokens,
                   std::vector<std::uint8_t>& out) const {
    const std::string what(payloadKindName(kind));
    const std::int64_t d = m_config.dModel;
    if (!x.defined() || x.dim() != 3 || x.size(2) != d || !x.is_floating_point())
        throw std::invalid_argument("codec: " + what + " must be a float [B, T, " + std::to_string(d) +
                                    "], got " + shapeOf(x));
    const std::int64_t batch = x.size(0), seq = x.size(1), n = batch * seq;
    if (batch < 1 || seq < 1 || seq > m_config.maxSeqLen || n > m_options.maxTokens)
        throw std::invalid_argument("codec: " + what + " " + shapeOf(x) + " is empty or beyond max_seq_len " +
                                    std::to_string(m_config.maxSeqLen) + " / the limit of " +
                                    std::to_string(m_options.maxTokens) + " tokens per payload");
    torch::Tensor ids;
    if (kind == PayloadKind::Activation || tokens.defined()) {
        if (!tokens.defined() || tokens.dim() != 2 || tokens.size(0) != batch || tokens.size(1) != seq ||
            tokens.is_floating_point() || tokens.scalar_type() == torch::kBool)
            throw std::invalid_argument("codec: token ids must be integers shaped [" + std::to_string(batch) +
                                        ", " + std::to_string(seq) + "], got " + shapeOf(tokens));
    }
    if (kind == PayloadKind::Activation) {
        ids = tokens.to(torch::kCPU, torch::kLong).reshape({n}).contiguous();
        const auto low = ids.min().item<std::int64_t>(), high = ids.max().item<std::int64_t>();
        if (low < 0 || high >= m_config.vocabSize)
            throw std::invalid_argument("codec: token id " + std::to_string(low < 0 ? low : high) +
                                        " is outside the vocabulary of " +
                                        std::to_string(m_config.vocabSize));
    }
    const auto rows = x.detach().to(m_options.device, torch::kFloat).reshape({n, d}).contiguous();

    const FrameHeader header = headerFor(kind, batch, seq);
    const std::uint64_t expected = payloadBytes(kind, batch, seq);
    const std::size_t start = out.size();
    out.reserve(start + expected);
    header.appendTo(out);
    encodeValues(kind, rows, ids, out);
    if (kind == PayloadKind::Activation)
        wire::appendTokens(out, ids, m_tokenBytes);
    if (out.size() - start != expected)
        throw std::logic_error("codec: " + describe() + " wrote " + std::to_string(out.size() - start) +
                               " bytes, not " + std::to_string(expected));
}

Result<FrameHeader> Codec::open(std::span<const std::uint8_t> payload, PayloadKind kind) const {
    auto parsed = FrameHeader::parse(payload);
    if (!parsed)
        return parsed.error();
    const FrameHeader& h = *parsed;
    const auto str = [](auto v) { return std::to_string(v); };
    if (h.codec != id())
        return makeError("codec payload was encoded with codec '" + std::string(codecName(h.codec)) +
                         "', this run uses '" + std::string(codecName(id())) + "'");
    const auto article = [](PayloadKind k) {
        return std::string(k == PayloadKind::Activation ? "an " : "a ");
    };
    if (h.kind != kind)
        return makeError("codec payload is " + article(h.kind) + std::string(payloadKindName(h.kind)) +
                         ", expected " + article(kind) + std::string(payloadKindName(kind)));
    const int tokenBytes = kind == PayloadKind::Activation ? m_tokenBytes : 0;
    if (h.tokenBytes != tokenBytes)
        return makeError("codec payload has " + str(h.tokenBytes) + "-byte token ids, this model's " +
                         (tokenBytes
                              ? "vocabulary of " + str(m_config.vocabSize) + " takes " + str(tokenBytes)
                              : std::string("gradients carry none")));
    if (h.width != std::uint32_t(m_config.dModel))
        return makeError("codec payload is " + str(h.width) + " wide, this model's d_model is " +
                         str(m_config.dModel));
    if (h.batch < 1 || h.seq < 1)
        return makeError("codec payload is empty (B=" + str(h.batch) + ", T=" + str(h.seq) + ")");
    if (h.seq > std::uint32_t(m_config.maxSeqLen))
        return makeError("codec payload's sequence length " + str(h.seq) + " exceeds max_seq_len " +
                         str(m_config.maxSeqLen));
    if (h.tokens() > std::uint64_t(m_options.maxTokens))
        return makeError("codec payload carries " + str(h.batch) + "x" + str(h.seq) +
                         " tokens, more than the limit of " + str(m_options.maxTokens));
    if (auto s = checkLayout(h); !s)
        return makeError(s.message());
    // Every field is bounded now, so this cannot overflow: tokens ≤ 2^24, d ≤ 2^16.
    const std::uint64_t expected = FrameHeader::kSize + valueBytes(h) + h.tokens() * h.tokenBytes;
    if (payload.size() < expected)
        return makeError("codec payload truncated: " + str(payload.size()) + " bytes, its header announces " +
                         str(expected));
    if (payload.size() > expected)
        return makeError("codec payload has trailing bytes: " + str(payload.size()) +
                         " bytes, its header announces " + str(expected));
    return h;
}

std::vector<std::uint8_t> Codec::encodeActivation(const torch::Tensor& hidden,
                                                  const torch::Tensor& tokens) const {
    std::vector<std::uint8_t> out;
    encode(PayloadKind::Activation, hidden, tokens, out);
    return out;
}

void Codec::encodeActivation(const torch::Tensor& hidden, const torch::Tensor& tokens,
                             std::vector<std::uint8_t>& out) const {
    encode(PayloadKind::Activation, hidden, tokens, out);
}

std::vector<std::uint8_t> Codec::encodeGradient(const torch::Tensor& grad,
                                                const torch::Tensor& tokens) const {
    std::vector<std::uint8_t> out;
    encode(PayloadKind::Gradient, grad, tokens, out);
    return out;
}

void Codec::encodeGradient(const torch::Tensor& grad, const torch::Tensor& tokens,
                           std::vector<std::uint8_t>& out) const {
    encode(PayloadKind::Gradient, grad, tokens, out);
}

Result<Activation> Codec::decodeActivation(std::span<const std::uint8_t> payload) const {
    return activation(payload, Rows::Decoded);
}

Result<Activation> Codec::decodeActivationForChecks(std::span<const std::uint8_t> payload) const {
    return activation(payload, Rows::ForChecks);
}

Result<torch::Tensor> Codec::decodeGradient(std::span<const std::uint8_t> payload) const {
    return gradient(payload, Rows::Decoded);
}

Result<torch::Tensor> Codec::decodeGradientForChecks(std::span<const std::uint8_t> payload) const {
    return gradient(payload, Rows::ForChecks);
}

Result<Activation> Codec::activation(std::span<const std::uint8_t> payload, Rows which) const {
    try {
        auto h = open(payload, PayloadKind::Activation);
        if (!h)
            return h.error();
        const std::int64_t n = static_cast<std::int64_t>(h->tokens());
        const std::uint64_t valueLength = valueBytes(*h);
        const auto body = payload.subspan(FrameHeader::kSize);
        auto ids = wire::readTokens(body.subspan(valueLength), n, h->tokenBytes);
        if (const auto top = ids.max().item<std::int64_t>(); top >= m_config.vocabSize)
            return makeError("codec payload carries token id " + std::to_string(top) +
                             ", outside the vocabulary of " + std::to_string(m_config.vocabSize));
        auto rows = which == Rows::Decoded ? decodeValues(*h, body.first(valueLength), ids)
                                           : checkValues(*h, body.first(valueLength), ids);
        if (!rows)
            return rows.error();
        const std::int64_t batch = h->batch, seq = h->seq;
        return Activation{rows->view({batch, seq, rows->size(1)}), ids.view({batch, seq})};
    } catch (const std::exception& e) {
        return makeError(std::string("codec payload could not be decoded: ") + e.what());
    }
}

Result<torch::Tensor> Codec::gradient(std::span<const std::uint8_t> payload, Rows which) const {
    try {
        auto h = open(payload, PayloadKind::Gradient);
        if (!h)
            return h.error();
        const auto values = payload.subspan(FrameHeader::kSize);
        auto rows = which == Rows::Decoded ? decodeValues(*h, values, torch::Tensor())
                                           : checkValues(*h, values, torch::Tensor());
        if (!rows)
            return rows.error();
        const std::int64_t batch = h->batch, seq = h->seq;
        return rows->view({batch, seq, rows->size(1)});
    } catch (const std::exception& e) {
        return makeError(std::string("codec payload could not be decoded: ") + e.what());
    }
}

Result<std::unique_ptr<Codec>> makeCodec(const ModelConfig& config, const CodecOptions& options) {
    switch (config.codec) {
    case CodecKind::None:
        return upcast(NoneCodec::create(config, options));
    case CodecKind::Int8:
        return upcast(Int8Codec::create(config, options));
    case CodecKind::Subspace:
        return upcast(SubspaceCodec::create(config, options));
    }
    return makeError("codec: unknown codec kind");
}

} // namespace tessera::gpu
