// SPDX-License-Identifier: Apache-2.0
#pragma once
// FrameHeader: the fixed 28-byte little-endian header that starts every codec payload.

#include "base/Dtype.h"
#include "base/ModelConfig.h"
#include "base/Result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tessera::gpu {

enum class PayloadKind : std::uint8_t { Activation = 1, Gradient = 2 };
std::string_view payloadKindName(PayloadKind kind);

// Layout (all integers little-endian):
//   0  char[4] magic "TSC1"      8  u32 B (batch)       20  u32 k (subspace rank, else 0)
//   4  u8  codec (1/2/3)         12 u32 T (sequence)    24  u32 block (int8 codec: values per
//   5  u8  kind (1 act, 2 grad)  16 u32 d (model width)        scale, else 0)
//   6  u8  dtype of the values
//   7  u8  bytes per token id (0 when no ids are carried)
// The body that follows is the codec's; its exact length is a function of these fields.
struct FrameHeader {
    static constexpr std::size_t kSize = 28;

    CodecKind codec = CodecKind::None;
    PayloadKind kind = PayloadKind::Activation;
    Dtype dtype = Dtype::F32;
    std::uint8_t tokenBytes = 0;
    std::uint32_t batch = 0;
    std::uint32_t seq = 0;
    std::uint32_t width = 0;
    std::uint32_t rank = 0;
    std::uint32_t block = 0;

    std::uint64_t tokens() const { return std::uint64_t(batch) * seq; }

    void appendTo(std::vector<std::uint8_t>& out) const;
    // Reads the fields and checks that each enum names something known. Bounds against a model
    // are the codec's job: this only refuses what no codec could read.
    static Result<FrameHeader> parse(std::span<const std::uint8_t> bytes);
};

} // namespace tessera::gpu
