// SPDX-License-Identifier: Apache-2.0
#pragma once
// SplitMix64: the one seeded mixing function every seeded draw derives from (the synthetic corpus,
// the subspace basis, a dataset's held-out blocks).

#include <cstdint>

namespace tessera::gpu {

inline std::uint64_t splitMix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

} // namespace tessera::gpu
