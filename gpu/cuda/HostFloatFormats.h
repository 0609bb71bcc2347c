// SPDX-License-Identifier: Apache-2.0
#pragma once
// bf16 and fp16 on the host, bit for bit, so the accuracy check can feed cuBLAS exactly the
// values its CPU reference uses. Rounding is to nearest, ties to even, like __float2bfloat16_rn
// and __float2half_rn; NaN stays NaN and overflow becomes infinity.

#include <cstdint>

namespace tessera::gpu::cudaimpl {

std::uint16_t floatToBf16Bits(float value);
float bf16BitsToFloat(std::uint16_t bits);

std::uint16_t floatToHalfBits(float value);
float halfBitsToFloat(std::uint16_t bits);

} // namespace tessera::gpu::cudaimpl
