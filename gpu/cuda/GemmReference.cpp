// SPDX-License-Identifier: Apache-2.0
#include "GemmReference.h"

#include "CudaCheck.h"
#include "HostFloatFormats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::gpu::cudaimpl {

std::vector<float> seededValues(std::size_t count, std::uint64_t seed) {
    std::vector<float> values(count);
    std::uint64_t state = seed;
    for (float& v : values) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;   // Knuth's MMIX LCG
        v = static_cast<float>(state >> 40) * (2.0f / 16777216.0f) - 1.0f; // top 24 bits
    }
    return values;
}

std::vector<std::byte> encodeRounding(std::vector<float>& values, Dtype dtype) {
    std::vector<std::byte> bytes(values.size() * dtypeSize(dtype));
    for (std::size_t i = 0; i < values.size(); ++i) {
        switch (dtype) {
        case Dtype::F32:
            std::memcpy(&bytes[i * 4], &values[i], 4);
            break;
        case Dtype::BF16: {
            const std::uint16_t bits = floatToBf16Bits(values[i]);
            std::memcpy(&bytes[i * 2], &bits, 2);
            values[i] = bf16BitsToFloat(bits);
            break;
        }
        case Dtype::F16: {
            const std::uint16_t bits = floatToHalfBits(values[i]);
            std::memcpy(&bytes[i * 2], &bits, 2);
            values[i] = halfBitsToFloat(bits);
            break;
        }
        case Dtype::I8:
            fail("no floating-point encoding for int8");
        }
    }
    return bytes;
}

std::vector<float> decode(const std::vector<std::byte>& bytes, Dtype dtype) {
    const std::size_t size = dtypeSize(dtype);
    std::vector<float> values(bytes.size() / size);
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint16_t bits = 0;
        switch (dtype) {
        case Dtype::F32:
            std::memcpy(&values[i], &bytes[i * 4], 4);
            break;
        case Dtype::BF16:
            std::memcpy(&bits, &bytes[i * 2], 2);
            values[i] = bf16BitsToFloat(bits);
            break;
        case Dtype::F16:
            std::memcpy(&bits, &bytes[i * 2], 2);
            values[i] = halfBitsToFloat(bits);
            break;
        case Dtype::I8:
            fail("no floating-point decoding for int8");
        }
    }
    return values;
}

std::vector<double> referenceGemm(const std::vector<float>& a, const std::vector<float>& b, int m, int n,
                                  int k) {
    const auto rows = static_cast<std::size_t>(m);
    const auto inner = static_cast<std::size_t>(k);
    std::vector<double> c(rows * static_cast<std::size_t>(n), 0.0);
    for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j)
        for (std::size_t p = 0; p < inner; ++p) {
            const double bpj = b[p + j * inner];
            for (std::size_t i = 0; i < rows; ++i) // innermost over rows: contiguous in A and C
                c[i + j * rows] += static_cast<double>(a[i + p * rows]) * bpj;
        }
    return c;
}

double maxRelativeError(const std::vector<float>& c, const std::vector<double>& reference) {
    double worst = 0;
    double scale = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        const double error = std::fabs(static_cast<double>(c[i]) - reference[i]);
        worst = std::isnan(error) ? std::numeric_limits<double>::infinity() : std::max(worst, error);
        scale = std::max(scale, std::fabs(reference[i]));
    }
    return worst / std::max(scale, std::numeric_limits<double>::min());
}

} // namespace tessera::gpu::cudaimpl
