// SPDX-License-Identifier: Apache-2.0
// BlockQuant: what a receiver decodes is what the sender's roundTrip predicted, bit for bit; the
// error per value is at most half a step of its block's scale; the bytes are the stated size (3.9×
// and 7.8× fewer than fp32 on a 1M-value share); and bytes that no sender makes — a size that is
// not the layout's, a negative, NaN or infinite scale, a 4-bit code of -8, an 8-bit code of -128 —
// and n + 1 values in n's bytes (the padding not zero) — are refused with a message rather than
// decoded into values.
#include "GpuTest.h"
#include "base/BlockQuant.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tessera;
using namespace tessera::gpu;

namespace {

std::vector<float> gradientLike(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0, 1e-3f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    v[n / 3] = 0.5f; // an outlier: only its block's scale grows
    if (n > 600)
        std::fill(v.begin() + 512, v.begin() + 600, 0.0f); // part of a block of zeros
    return v;
}

} // namespace

TESSERA_TEST(theReceiverDecodesWhatTheSenderPredicted) {
    for (const int bits : {8, 4}) {
        for (const std::size_t n :
             {std::size_t(1), std::size_t(255), std::size_t(257), std::size_t(10'001)}) {
            const std::vector<float> x = gradientLike(n, unsigned(n + bits));
            const std::vector<std::uint8_t> bytes = quantize(x, bits);
            CHECK_MSG(std::int64_t(bytes.size()) == quantizedBytes(std::int64_t(n), bits),
                      n << " at " << bits);
            CHECK(bytes.size() % 4 == 0);
            Result<std::vector<float>> decoded = dequantize(bytes, std::int64_t(n), bits);
            CHECK_MSG(decoded, decoded.message());
            std::vector<float> predicted = x;
            roundTrip(predicted, bits);
            CHECK(std::memcmp(predicted.data(), decoded->data(), n * sizeof(float)) == 0);
            // At most half a step off: the step is max|x| / levels of the value's block.
            const float levels = bits == 8 ? 127.0f : 7.0f;
            for (std::size_t b = 0; b < n; b += kQuantBlock) {
                const std::size_t end = std::min(n, b + std::size_t(kQuantBlock));
                float most = 0;
                for (std::size_t i = b; i < end; ++i)
                    most = std::max(most, std::fabs(x[i]));
                for (std::size_t i = b; i < end; ++i)
                    CHECK_MSG(std::fabs((*decoded)[i] - x[i]) <= most / levels * 0.5001f + 1e-12f,
                              "value " << i << " at " << bits << " bits");
            }
        }
    }
}

TESSERA_TEST(theBytesAreFewer) {
    const std::int64_t n = 1'000'000;
    CHECK(quantizedBytes(n, 32) == 4 * n);
    const double eight = double(4 * n) / double(quantizedBytes(n, 8));
    const double four = double(4 * n) / double(quantizedBytes(n, 4));
    CHECK_MSG(eight > 3.9 && eight < 4.0, eight);
    CHECK_MSG(four > 7.7 && four < 8.0, four);
    // fp32 travels as itself.
    const std::vector<float> x = gradientLike(300, 7);
    Result<std::vector<float>> same = dequantize(quantize(x, 32), 300, 32);
    CHECK(same && *same == x);
}

TESSERA_TEST(bytesNoSenderMakesAreRefused) {
    const std::vector<float> x = gradientLike(600, 3);
    for (const int bits : {8, 4}) {
        const std::vector<std::uint8_t> good = quantize(x, bits);
        std::vector<std::uint8_t> shorter(good.begin(), good.end() - 4);
        CHECK(!dequantize(shorter, 600, bits));
        CHECK(!dequantize(good, 601 + 1024, bits));
        for (const float scale :
             {-1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
            std::vector<std::uint8_t> bad = good;
            std::memcpy(bad.data() + 4, &scale, 4); // the second block's scale
            Result<std::vector<float>> r = dequantize(bad, 600, bits);
            CHECK_MSG(!r, "scale " << scale << " at " << bits << " bits was decoded");
            CHECK(r.message().find("scale") != std::string::npos);
        }
        std::vector<std::uint8_t> outOfRange = good;
        const std::size_t codes = 3 * 4;                  // 3 blocks of scales
        outOfRange[codes + 10] = bits == 8 ? 0x80 : 0x00; // -128, or the nibbles -8 -8
        Result<std::vector<float>> r = dequantize(outOfRange, 600, bits);
        CHECK_MSG(!r, bits << " bits");
        CHECK(r.message().find("out of range") != std::string::npos);
    }
    CHECK(!dequantize(quantize(x, 8), 600, 6));
    // n + 1 values in the same bytes as n (the padding holds the last): refused, not read as n.
    for (const int bits : {8, 4}) {
        const std::vector<float> more = gradientLike(599, 5);
        CHECK(quantizedBytes(599, bits) == quantizedBytes(598, bits));
        Result<std::vector<float>> r = dequantize(quantize(more, bits), 598, bits);
        CHECK_MSG(!r, bits << " bits");
        CHECK(r.message().find("padding") != std::string::npos);
    }
    std::vector<std::uint8_t> nan = quantize(x, 32);
    const float n = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(nan.data() + 40, &n, 4);
    CHECK(!dequantize(nan, 600, 32));
}
