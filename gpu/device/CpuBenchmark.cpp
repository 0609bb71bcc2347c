// SPDX-License-Identifier: Apache-2.0
#include "device/CpuBenchmark.h"

#include <ATen/ATen.h>

#include <string>

namespace tessera::gpu::cpu {

namespace {

at::ScalarType scalarType(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32:
        return at::kFloat;
    case Dtype::BF16:
        return at::kBFloat16;
    case Dtype::F16:
        return at::kHalf;
    case Dtype::I8:
        return at::kChar;
    }
    return at::kFloat;
}

std::string firstLine(const char* what) {
    std::string s = what ? what : "unknown error";
    return s.substr(0, s.find('\n'));
}

} // namespace

bool gemmSupported(Dtype dtype) {
    if (dtype == Dtype::I8)
        return false;
    try {
        const auto a = at::ones({2, 2}, at::TensorOptions().dtype(scalarType(dtype)));
        (void)at::mm(a, a);
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

Result<BenchSample> benchGemm(Dtype dtype, int m, int n, int k, const RepeatPolicy& policy) {
    try {
        const auto options = at::TensorOptions().dtype(scalarType(dtype));
        const auto a = at::randn({m, k}).to(options);
        const auto b = at::randn({k, n}).to(options);
        auto c = at::empty({m, n}, options);
        return repeatTimed(policy, [&] { return wallSeconds([&] { at::mm_out(c, a, b); }); });
    } catch (const std::exception& e) {
        return makeError("CPU GEMM " + std::string(dtypeName(dtype)) + " failed: " + firstLine(e.what()));
    }
}

Result<BenchSample> benchCopy(std::size_t bytes, const RepeatPolicy& policy) {
    try {
        const auto n = static_cast<int64_t>(bytes / sizeof(float));
        const auto src = at::ones({n});
        auto dst = at::zeros({n}); // touched, so page faults are not timed
        return repeatTimed(policy, [&] { return wallSeconds([&] { dst.copy_(src); }); });
    } catch (const std::exception& e) {
        return makeError("CPU copy failed: " + firstLine(e.what()));
    }
}

Result<std::vector<float>> matmul(Dtype dtype, const std::vector<float>& a, const std::vector<float>& b,
                                  int m, int n, int k) {
    if (m <= 0 || n <= 0 || k <= 0 || a.size() != std::size_t(m) * k || b.size() != std::size_t(k) * n)
        return makeError("matmul: buffer sizes do not match " + std::to_string(m) + "x" + std::to_string(k) +
                         "x" + std::to_string(n));
    try {
        const auto options = at::TensorOptions().dtype(scalarType(dtype));
        // from_blob does not copy or own: .to() makes the tensors we multiply.
        const auto ta = at::from_blob(const_cast<float*>(a.data()), {m, k}).to(options);
        const auto tb = at::from_blob(const_cast<float*>(b.data()), {k, n}).to(options);
        auto tc = at::empty({m, n}, options);
        at::mm_out(tc, ta, tb);
        const auto out = tc.to(at::kFloat).contiguous();
        return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
    } catch (const std::exception& e) {
        return makeError("CPU matmul " + std::string(dtypeName(dtype)) + " failed: " + firstLine(e.what()));
    }
}

} // namespace tessera::gpu::cpu
