// SPDX-License-Identifier: Apache-2.0
// The GEMM the CPU benchmark times computes the right product: compared with a naive
// triple loop in double precision, on odd shapes, per dtype.
#include "GpuTest.h"
#include "device/CpuBenchmark.h"

#include <cmath>
#include <cstdint>
#include <cstring>

using namespace tessera::gpu;

namespace {

std::vector<float> seeded(std::size_t n, std::uint32_t seed) {
    std::vector<float> v(n);
    for (auto& x : v) {
        seed = seed * 1664525u + 1013904223u;
        x = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    }
    return v;
}

// Rounds to the nearest bfloat16 (ties to even), as LibTorch's conversion does.
float roundBf16(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&x, &bits, 4);
    return x;
}

double maxRelativeError(Dtype dtype, int m, int n, int k) {
    auto a = seeded(std::size_t(m) * k, 1);
    auto b = seeded(std::size_t(k) * n, 2);
    auto c = cpu::matmul(dtype, a, b, m, n, k);
    CHECK_MSG(c, c.message());
    if (dtype == Dtype::BF16) {
        for (auto& x : a)
            x = roundBf16(x);
        for (auto& x : b)
            x = roundBf16(x);
    }
    double worst = 0, scale = 0;
    std::vector<double> ref(std::size_t(m) * n);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            double sum = 0;
            for (int p = 0; p < k; ++p)
                sum += double(a[std::size_t(i) * k + p]) * b[std::size_t(p) * n + j];
            ref[std::size_t(i) * n + j] = sum;
            scale = std::max(scale, std::abs(sum));
        }
    for (std::size_t i = 0; i < ref.size(); ++i)
        worst = std::max(worst, std::abs((*c)[i] - ref[i]));
    return worst / std::max(scale, 1e-30);
}

} // namespace

TESSERA_TEST(fp32MatchesNaiveReference) {
    for (auto [m, n, k] : {std::tuple{67, 45, 131}, {1, 1, 1}, {128, 256, 64}}) {
        const double err = maxRelativeError(Dtype::F32, m, n, k);
        CHECK_MSG(err < 1e-5, m << "x" << k << "x" << n << " error " << err);
    }
}

TESSERA_TEST(bf16MatchesNaiveReferenceWithinItsPrecision) {
    CHECK(cpu::gemmSupported(Dtype::BF16));
    // Inputs are rounded to bf16 in the reference too; what remains is the bf16 output rounding
    // (2^-8 relative) and the accumulation: in fp32 where the CPU has a bf16 dot product (≤ 1e-2
    // measured), in bf16 on an AVX2-only CPU (LibTorch 1.13: 0.029 measured on an AMD EPYC, about
    // √131 · 2^-8 = 0.045 expected for 131 terms). Garbage or a wrong type would be far above either.
    const double err = maxRelativeError(Dtype::BF16, 67, 45, 131);
    CHECK_MSG(err < 6e-2, "error " << err);
}

TESSERA_TEST(mismatchedBuffersAreRefused) {
    auto c = cpu::matmul(Dtype::F32, std::vector<float>(6), std::vector<float>(6), 2, 2, 2);
    CHECK(!c);
    CHECK(c.message().find("do not match") != std::string::npos);
}
