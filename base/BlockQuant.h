// SPDX-License-Identifier: Apache-2.0
#pragma once
// BlockQuant: fp32 vectors in 8 or 4 bits per value, a scale per block of 256 — how the gradient
// exchange sends its shares and results with --gradient-bits 8 (3.9× fewer bytes than fp32) or 4
// (7.8×). Torch-free: the node, the coordinator and the simulator round the same way.
//
// Layout of n values at b bits: ⌈n/256⌉ fp32 scales (little-endian), then the n codes (b = 8: one
// signed byte each; b = 4: two per byte, low nibble first, offset by 8), zero-padded to a multiple
// of 4 bytes. A value is code × scale, the scale max|x| / L of its block (L = 127 or 7), the code
// round(x / scale) — to nearest, so the same values give the same bytes everywhere. What rounding
// loses is kept by the sender (error feedback), never by the receiver.
//
// bits = 32 means plain fp32 (no scales), for the callers that switch on the run's setting.

#include "base/Result.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::gpu {

inline constexpr std::int64_t kQuantBlock = 256;

// 32, 8 or 4.
bool validQuantBits(int bits);
// Bytes of n values at `bits`.
std::int64_t quantizedBytes(std::int64_t n, int bits);
// The bytes of `values` (finite) at `bits`.
std::vector<std::uint8_t> quantize(std::span<const float> values, int bits);
// The n values `bytes` hold at `bits`; an error when the size is not quantizedBytes(n, bits), a scale
// is negative or not finite, or a code is out of range (-127..127, -7..7).
Result<std::vector<float>> dequantize(std::span<const std::uint8_t> bytes, std::int64_t n, int bits);
// values ← what the receiver of quantize(values, bits) decodes (bit for bit).
void roundTrip(std::span<float> values, int bits);

} // namespace tessera::gpu
