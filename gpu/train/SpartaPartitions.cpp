// SPDX-License-Identifier: Apache-2.0
#include "train/SpartaPartitions.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace tessera::gpu {

namespace {

std::uint64_t hashName(const std::string& name, std::uint64_t seed) {
    std::uint64_t h = seed ^ 0xcbf29ce484222325ull; // FNV-1a over the name
    for (const char c : name)
        h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
}

// Calls deal(partition, slice) for every block in dealing order.
template <typename Deal>
void forEachBlock(const std::vector<std::pair<std::string, std::int64_t>>& parameters, std::uint64_t seed,
                  int partitions, Deal&& deal) {
    if (partitions < 1)
        throw std::invalid_argument("SPARTA needs at least one partition");
    std::size_t next = 0;
    std::vector<std::int64_t> order;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        const auto& [name, n] = parameters[i];
        const std::int64_t blocks = (n + kSpartaBlock - 1) / kSpartaBlock;
        order.resize(static_cast<std::size_t>(blocks));
        std::iota(order.begin(), order.end(), 0);
        std::mt19937_64 rng(hashName(name, seed));
        std::shuffle(order.begin(), order.end(), rng);
        for (const std::int64_t b : order) {
            const std::int64_t begin = b * kSpartaBlock;
            deal(static_cast<int>(next % static_cast<std::size_t>(partitions)),
                 SpartaSlice{i, begin, std::min(kSpartaBlock, n - begin)});
            ++next;
        }
    }
}

} // namespace

std::vector<std::vector<SpartaSlice>>
dealSpartaPartitions(const std::vector<std::pair<std::string, std::int64_t>>& parameters, std::uint64_t seed,
                     int partitions) {
    std::vector<std::vector<SpartaSlice>> slices(static_cast<std::size_t>(std::max(partitions, 1)));
    forEachBlock(parameters, seed, partitions,
                 [&](int p, const SpartaSlice& s) { slices[static_cast<std::size_t>(p)].push_back(s); });
    return slices;
}

void forEachSpartaSlice(const std::vector<std::pair<std::string, std::int64_t>>& parameters,
                        std::uint64_t seed, int partitions,
                        const std::function<void(int, const SpartaSlice&)>& each) {
    forEachBlock(parameters, seed, partitions, each);
}

std::vector<SpartaSlice> spartaPartition(const std::vector<std::pair<std::string, std::int64_t>>& parameters,
                                         std::uint64_t seed, int partitions, int partition) {
    std::vector<SpartaSlice> slices;
    forEachBlock(parameters, seed, partitions, [&](int p, const SpartaSlice& s) {
        if (p == partition)
            slices.push_back(s);
    });
    return slices;
}

std::vector<std::int64_t>
spartaPartitionSizes(const std::vector<std::pair<std::string, std::int64_t>>& parameters, std::uint64_t seed,
                     int partitions) {
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(std::max(partitions, 1)), 0);
    forEachBlock(parameters, seed, partitions,
                 [&](int p, const SpartaSlice& s) { sizes[static_cast<std::size_t>(p)] += s.length; });
    return sizes;
}

} // namespace tessera::gpu
