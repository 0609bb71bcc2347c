// SPDX-License-Identifier: Apache-2.0
#include "model/RotaryEmbedding.h"

#include <cmath>

namespace tessera::gpu {

RotaryEmbedding::RotaryEmbedding(const ModelConfig& config, torch::Device device, torch::ScalarType dtype) {
    const int half = config.headDim() / 2;
    const int length = config.maxSeqLen;
    // Angles in double on the CPU: the same tables on every device.
    auto cosTable = torch::empty({length, 1, 2 * half}, torch::kDouble);
    auto sinTable = torch::empty({length, 1, 2 * half}, torch::kDouble);
    auto* c = cosTable.data_ptr<double>();
    auto* s = sinTable.data_ptr<double>();
    for (int t = 0; t < length; ++t)
        for (int i = 0; i < half; ++i) {
            const double angle = t * std::pow(config.ropeTheta, -2.0 * i / (2.0 * half));
            const std::size_t row = static_cast<std::size_t>(t) * 2 * half;
            c[row + i] = c[row + half + i] = std::cos(angle);
            // rotate_half(x) = (−x₂, x₁): fold its sign into the table.
            s[row + i] = -std::sin(angle);
            s[row + half + i] = std::sin(angle);
        }
    m_cos = cosTable.to(device, dtype);
    m_sin = sinTable.to(device, dtype);
}

torch::Tensor RotaryEmbedding::apply(const torch::Tensor& x) const {
    const std::int64_t length = x.size(1);
    const std::int64_t half = x.size(3) / 2;
    // (x₁, x₂)·cos + (x₂, x₁)·(−sin, sin)
    const auto swapped = torch::cat({x.narrow(3, half, half), x.narrow(3, 0, half)}, 3);
    return x * m_cos.narrow(0, 0, length) + swapped * m_sin.narrow(0, 0, length);
}

} // namespace tessera::gpu
