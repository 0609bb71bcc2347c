// SPDX-License-Identifier: Apache-2.0
#pragma once
// SpartaPartitions: which 256-value blocks of a stage's parameters make up each SPARTA partition —
// a function of the parameters' names and sizes and the run's seed only, so every replica, the
// coordinator's checkpoint on disk (torch-free) and Sparta itself deal them identically.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::gpu {

struct SpartaSlice {
    std::size_t parameter;      // index in the stage's parameter order
    std::int64_t begin, length; // in elements of the flattened parameter
};

inline constexpr std::int64_t kSpartaBlock = 256;

// Every parameter is cut into blocks of kSpartaBlock elements; each parameter's blocks, shuffled by a
// generator seeded with its name, are dealt round-robin from where the last parameter stopped, so
// partitions stay balanced to one block even for small tensors. parameters: (name, element count).
std::vector<std::vector<SpartaSlice>>
dealSpartaPartitions(const std::vector<std::pair<std::string, std::int64_t>>& parameters, std::uint64_t seed,
                     int partitions);
// Every slice of every partition in dealing order, one call each (partition, slice): what a caller
// that keeps its own form of the partitions needs, without every partition's list held at once.
void forEachSpartaSlice(const std::vector<std::pair<std::string, std::int64_t>>& parameters,
                        std::uint64_t seed, int partitions,
                        const std::function<void(int, const SpartaSlice&)>& each);
// The slices of partition `partition` alone, in the same order: what one caller needs without holding
// every partition's list (millions of slices at 8b); costs one shuffle per parameter.
std::vector<SpartaSlice> spartaPartition(const std::vector<std::pair<std::string, std::int64_t>>& parameters,
                                         std::uint64_t seed, int partitions, int partition);
// How many values each partition holds.
std::vector<std::int64_t>
spartaPartitionSizes(const std::vector<std::pair<std::string, std::int64_t>>& parameters, std::uint64_t seed,
                     int partitions);

} // namespace tessera::gpu
