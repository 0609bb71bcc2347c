// SPDX-License-Identifier: Apache-2.0
#include "base/BlockQuant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

namespace tessera::gpu {

namespace {

int levels(int bits) {
    return bits == 8 ? 127 : 7;
}

std::int64_t blocks(std::int64_t n) {
    return (n + kQuantBlock - 1) / kQuantBlock;
}

std::int64_t codeBytes(std::int64_t n, int bits) {
    return bits == 8 ? n : (n + 1) / 2;
}

float scaleOf(std::span<const float> block, int bits) {
    float most = 0;
    for (const float v : block)
        most = std::max(most, std::fabs(v));
    const float l = float(levels(bits));
    const float scale = most / l;
    // Rounded up, the scale of a block whose largest value lies within a rounding of FLT_MAX makes
    // L × scale infinite: the receiver would refuse the share. Round it down then (codes stay ≤ L).
    return std::isfinite(scale * l) ? scale : std::nextafter(scale, 0.0f);
}

int codeOf(float v, float scale, int bits) {
    if (scale == 0)
        return 0;
    const int l = levels(bits);
    return std::clamp(int(std::lrint(v / scale)), -l, l);
}

void putFloat(std::uint8_t* at, float v) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(v);
    for (int k = 0; k < 4; ++k)
        at[k] = std::uint8_t(u >> (8 * k));
}

float getFloat(const std::uint8_t* at) {
    std::uint32_t u = 0;
    for (int k = 0; k < 4; ++k)
        u |= std::uint32_t(at[k]) << (8 * k);
    return std::bit_cast<float>(u);
}

} // namespace

bool validQuantBits(int bits) {
    return bits == 32 || bits == 8 || bits == 4;
}

std::int64_t quantizedBytes(std::int64_t n, int bits) {
    if (bits == 32)
        return n * 4;
    return blocks(n) * 4 + (codeBytes(n, bits) + 3) / 4 * 4;
}

std::vector<std::uint8_t> quantize(std::span<const float> values, int bits) {
    const std::int64_t n = std::int64_t(values.size());
    std::vector<std::uint8_t> out(std::size_t(quantizedBytes(n, bits)), 0);
    if (bits == 32) {
        for (std::int64_t i = 0; i < n; ++i)
            putFloat(out.data() + 4 * i, values[std::size_t(i)]);
        return out;
    }
    std::uint8_t* codes = out.data() + blocks(n) * 4;
    for (std::int64_t b = 0; b < blocks(n); ++b) {
        const std::int64_t begin = b * kQuantBlock, end = std::min(n, begin + kQuantBlock);
        const float scale = scaleOf(values.subspan(std::size_t(begin), std::size_t(end - begin)), bits);
        putFloat(out.data() + 4 * b, scale);
        for (std::int64_t i = begin; i < end; ++i) {
            const int code = codeOf(values[std::size_t(i)], scale, bits);
            if (bits == 8)
                codes[i] = std::uint8_t(std::int8_t(code));
            else
                codes[i / 2] |= std::uint8_t((code + 8) << (4 * (i % 2)));
        }
    }
    return out;
}

Result<std::vector<float>> dequantize(std::span<const std::uint8_t> bytes, std::int64_t n, int bits) {
    if (!validQuantBits(bits))
        return makeError("values at " + std::to_string(bits) + " bits: 32, 8 or 4 expected");
    if (n < 0 || std::int64_t(bytes.size()) != quantizedBytes(n, bits))
        return makeError(std::to_string(bytes.size()) + " bytes for " + std::to_string(n) + " values at " +
                         std::to_string(bits) + " bits, " + std::to_string(quantizedBytes(n, bits)) +
                         " expected");
    std::vector<float> out(static_cast<std::size_t>(n));
    if (bits == 32) {
        for (std::int64_t i = 0; i < n; ++i)
            if (!std::isfinite(out[std::size_t(i)] = getFloat(bytes.data() + 4 * i)))
                return makeError("value " + std::to_string(i) + " is not finite");
        return out;
    }
    const std::uint8_t* codes = bytes.data() + blocks(n) * 4;
    // The padding is zero, as is a last byte's unused nibble: any other bytes are no sender's (and
    // n + 1 values must not decode as n).
    const std::int64_t used = codeBytes(n, bits), padded = std::int64_t(bytes.size()) - blocks(n) * 4;
    for (std::int64_t k = used; k < padded; ++k)
        if (codes[k] != 0)
            return makeError("the padding after value " + std::to_string(n - 1) + " is not zero");
    if (bits == 4 && n % 2 == 1 && (codes[used - 1] >> 4) != 0)
        return makeError("the padding after value " + std::to_string(n - 1) + " is not zero");
    const int l = levels(bits);
    for (std::int64_t b = 0; b < blocks(n); ++b) {
        const float scale = getFloat(bytes.data() + 4 * b);
        if (!std::isfinite(scale) || scale < 0)
            return makeError("block " + std::to_string(b) + "'s scale is negative or not finite");
        const std::int64_t begin = b * kQuantBlock, end = std::min(n, begin + kQuantBlock);
        for (std::int64_t i = begin; i < end; ++i) {
            const int code =
                bits == 8 ? int(std::int8_t(codes[i])) : int((codes[i / 2] >> (4 * (i % 2))) & 15) - 8;
            if (code < -l || code > l)
                return makeError("value " + std::to_string(i) + "'s code " + std::to_string(code) +
                                 " is out of range");
            const float v = float(code) * scale;
            if (!std::isfinite(v))
                return makeError("value " + std::to_string(i) + " is not finite");
            out[std::size_t(i)] = v;
        }
    }
    return out;
}

void roundTrip(std::span<float> values, int bits) {
    if (bits == 32)
        return;
    const std::int64_t n = std::int64_t(values.size());
    for (std::int64_t b = 0; b < blocks(n); ++b) {
        const std::int64_t begin = b * kQuantBlock, end = std::min(n, begin + kQuantBlock);
        const float scale = scaleOf(values.subspan(std::size_t(begin), std::size_t(end - begin)), bits);
        for (std::int64_t i = begin; i < end; ++i)
            values[std::size_t(i)] = float(codeOf(values[std::size_t(i)], scale, bits)) * scale;
    }
}

} // namespace tessera::gpu
