// SPDX-License-Identifier: Apache-2.0
#include "codec/WirePacking.h"

#include <ATen/ATen.h>

#include <bit>
#include <cstring>
#include <stdexcept>

namespace tessera::gpu::wire {

// Floats are copied in host byte order; the format is little-endian, which every machine we
// build for is. A big-endian port would byte-swap here.
static_assert(std::endian::native == std::endian::little, "codec payloads are little-endian");

torch::ScalarType scalarType(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32:
        return torch::kFloat;
    case Dtype::BF16:
        return torch::kBFloat16;
    case Dtype::F16:
        return torch::kHalf;
    case Dtype::I8:
        return torch::kChar;
    }
    throw std::invalid_argument("unknown dtype");
}

int tokenBytesFor(int vocabSize) {
    if (vocabSize <= (1 << 16))
        return 2;
    if (vocabSize <= (1 << 24))
        return 3;
    return 4;
}

void appendTensor(std::vector<std::uint8_t>& out, const torch::Tensor& t) {
    const auto c = t.to(torch::kCPU).contiguous(); // a device's tensor crosses the bus here, once
    const auto* p = static_cast<const std::uint8_t*>(c.data_ptr());
    out.insert(out.end(), p, p + c.numel() * c.element_size());
}

torch::Tensor readTensor(std::span<const std::uint8_t> bytes, torch::ScalarType type, std::int64_t count) {
    auto t = torch::empty({count}, torch::TensorOptions().dtype(type));
    if (bytes.size() != static_cast<std::size_t>(count) * t.element_size())
        throw std::logic_error("readTensor: section length does not match its element count");
    // A copy, not from_blob: the span is unaligned and does not outlive the call.
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    return t;
}

void appendTokens(std::vector<std::uint8_t>& out, const torch::Tensor& ids, int width) {
    // Byte planes by shifts rather than a memcpy of int64s: the width is not a C type.
    std::vector<torch::Tensor> planes;
    for (int i = 0; i < width; ++i)
        planes.push_back(at::bitwise_and(at::bitwise_right_shift(ids, 8 * i), 0xff));
    appendTensor(out, torch::stack(planes, 1).to(torch::kByte));
}

torch::Tensor readTokens(std::span<const std::uint8_t> bytes, std::int64_t count, int width) {
    const auto planes = readTensor(bytes, torch::kByte, count * width).view({count, width}).to(torch::kLong);
    auto ids = planes.select(1, 0).clone();
    for (int i = 1; i < width; ++i)
        ids.add_(at::bitwise_left_shift(planes.select(1, i), 8 * i));
    return ids;
}

Int8Rows quantiseRows(const torch::Tensor& rows) {
    const auto scales = rows.abs().amax(1) / 127.0f;
    // All-zero rows keep scale 0 on the wire; divide them by 1 instead of 0.
    const auto divisor = torch::where(scales > 0, scales, torch::ones_like(scales));
    auto q = (rows / divisor.unsqueeze(1)).round_().clamp_(-127, 127).to(torch::kChar);
    return {scales, q};
}

torch::Tensor dequantiseRows(const torch::Tensor& scales, const torch::Tensor& values) {
    return values.to(torch::kFloat).mul_(scales.unsqueeze(1));
}

bool scalesValid(const torch::Tensor& scales) {
    return at::isfinite(scales).all().item<bool>() && (scales >= 0).all().item<bool>();
}

} // namespace tessera::gpu::wire
