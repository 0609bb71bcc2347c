// SPDX-License-Identifier: Apache-2.0
#include "HostFloatFormats.h"

#include <bit>
#include <cmath>

namespace tessera::gpu::cudaimpl {

std::uint16_t floatToBf16Bits(float value) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return static_cast<std::uint16_t>((x >> 16) | 0x0040u); // keep NaN a (quiet) NaN
    // Adding 0x7fff plus the kept LSB rounds ties to even; a carry may bump the exponent,
    // which is the correct result (up to infinity).
    const std::uint32_t lsb = (x >> 16) & 1u;
    return static_cast<std::uint16_t>((x + 0x7fffu + lsb) >> 16);
}

float bf16BitsToFloat(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t floatToHalfBits(float value) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t magnitude = x & 0x7fffffffu;

    if (magnitude > 0x7f800000u)
        return sign | 0x7e00u; // NaN
    if (magnitude >= 0x477ff000u)
        return sign | 0x7c00u; // >= 65520 rounds to infinity (65504 is the largest half)
    if (magnitude < 0x38800000u) {
        // Below 2^-14, the smallest normal half: a subnormal m·2^-24. Scaling by 2^24 is exact,
        // so rounding the scaled value to an integer (ties to even) gives m; m == 1024 is
        // exactly the encoding of the smallest normal.
        const double scaled = static_cast<double>(std::bit_cast<float>(magnitude)) * 16777216.0;
        double m = std::floor(scaled);
        const double rest = scaled - m;
        if (rest > 0.5 || (rest == 0.5 && std::fmod(m, 2.0) != 0))
            m += 1;
        return sign | static_cast<std::uint16_t>(m);
    }
    // Normal: rebias the exponent (127 → 15) and round the mantissa from 23 to 10 bits; a carry
    // out of the mantissa correctly bumps the exponent.
    const std::uint32_t rebiased = magnitude - 0x38000000u;
    const std::uint32_t lsb = (rebiased >> 13) & 1u;
    return sign | static_cast<std::uint16_t>((rebiased + 0x0fffu + lsb) >> 13);
}

float halfBitsToFloat(std::uint16_t bits) {
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu;
    const std::uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0) {
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 0x1f)
        return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

} // namespace tessera::gpu::cudaimpl
