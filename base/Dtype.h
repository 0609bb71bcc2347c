// SPDX-License-Identifier: Apache-2.0
#pragma once
// The element types Tessera computes and ships in.

#include <cstddef>
#include <optional>
#include <string_view>

namespace tessera::gpu {

enum class Dtype { F32, BF16, F16, I8 };

constexpr std::string_view dtypeName(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32:
        return "fp32";
    case Dtype::BF16:
        return "bf16";
    case Dtype::F16:
        return "fp16";
    case Dtype::I8:
        return "int8";
    }
    return "?";
}

constexpr std::size_t dtypeSize(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32:
        return 4;
    case Dtype::BF16:
    case Dtype::F16:
        return 2;
    case Dtype::I8:
        return 1;
    }
    return 0;
}

constexpr std::optional<Dtype> parseDtype(std::string_view name) {
    for (Dtype d : {Dtype::F32, Dtype::BF16, Dtype::F16, Dtype::I8})
        if (dtypeName(d) == name)
            return d;
    return std::nullopt;
}

} // namespace tessera::gpu
