// SPDX-License-Identifier: Apache-2.0
#pragma once
// FrameDecoder: a torch-free facade over the run's codec for whoever checks boundary tensors
// without running a stage (the coordinator's result checks). Codec bytes in, fp32 values and token
// ids out, every header field and length checked by the codec against the run's model first.

#include "base/ModelConfig.h"
#include "base/Result.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tessera::gpu {

class Codec;

struct DecodedFrame {
    std::int64_t batch = 0;
    std::int64_t seq = 0;
    std::int64_t width = 0;           // values a row (one row per token)
    std::int64_t dimension = 0;       // the rows' d: what a row's RMS divides its squared norm by
    std::vector<float> values;        // batch·seq·width, row-major
    std::vector<std::int64_t> tokens; // batch·seq ids (activations only)
};

class FrameDecoder {
public:
    static Result<std::unique_ptr<FrameDecoder>> create(const ModelConfig& config,
                                                        std::int64_t maxTokens = 65536);
    ~FrameDecoder();
    FrameDecoder(const FrameDecoder&) = delete;
    FrameDecoder& operator=(const FrameDecoder&) = delete;

    Result<DecodedFrame> activation(std::span<const std::uint8_t> payload) const {
        return decode(payload, true, false);
    }
    Result<DecodedFrame> gradient(std::span<const std::uint8_t> payload) const {
        return decode(payload, false, false);
    }
    // The rows the result checks read (Codec::decodeActivationForChecks): their norms, and the
    // differences and dot products of two frames of the same token ids, are the decoded rows'; a
    // subspace frame's are k + 1 values a token instead of d (width < dimension).
    Result<DecodedFrame> activationForChecks(std::span<const std::uint8_t> payload) const {
        return decode(payload, true, true);
    }
    Result<DecodedFrame> gradientForChecks(std::span<const std::uint8_t> payload) const {
        return decode(payload, false, true);
    }

private:
    explicit FrameDecoder(std::unique_ptr<Codec> codec);
    Result<DecodedFrame> decode(std::span<const std::uint8_t> payload, bool activation, bool forChecks) const;
    std::unique_ptr<Codec> m_codec;
};

} // namespace tessera::gpu
