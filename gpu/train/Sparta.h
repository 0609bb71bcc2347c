// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sparta: the bookkeeping of SPARTA sparse averaging. Every parameter is cut into blocks of 256
// elements and each block is dealt to one of 20 partitions by a seeded shuffle, identically on
// every replica (train/SpartaPartitions, as the coordinator's checkpoint deals them). Every 20 steps replicas
// average the next partition (5% of the weights), so every weight is averaged once per 400 steps. Internal to
// gpu/ (torch tensors).

#include "train/SpartaPartitions.h"

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::gpu {

class Sparta {
public:
    static constexpr int kPartitions = 20;
    static constexpr int kInterval = 20; // steps between two averaging rounds
    static constexpr std::int64_t kBlock = kSpartaBlock;

    using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;
    Sparta(NamedTensors parameters, std::uint64_t seed, int partitions = kPartitions,
           int interval = kInterval);

    int partitions() const { return m_partitions; }
    bool isAveragingStep(std::int64_t step) const { return step > 0 && step % m_interval == 0; }
    int partitionForStep(std::int64_t step) const {
        return static_cast<int>((step / m_interval) % m_partitions);
    }

    // The values of partition p as one flat fp32 tensor, in a fixed order (a copy).
    torch::Tensor gather(int p) const;
    // The delta rule: w += average − snapshot, where snapshot is what this replica sent. It
    // keeps whatever the replica learned while the exchange ran.
    void applyDelta(int p, const torch::Tensor& average, const torch::Tensor& snapshot);
    // w = values for partition p (values in gather's order): a checkpoint taking the average, a
    // replica syncing all weights.
    void scatter(int p, const torch::Tensor& values);
    std::int64_t partitionSize(int p) const;

private:
    // A partition's values of one parameter, in dealing order: a run of whole blocks moved by one
    // index_select / index_add_ / index_copy_ (blocks: their indices, int64, on the parameter's
    // device), or a parameter's last, shorter block on its own (begin, length). At 8b a partition
    // holds ~213,000 blocks: one torch call per block is 2.7-4x slower on a CPU (bench_sparta), and
    // a kernel launch each on a GPU.
    struct Segment {
        std::size_t parameter = 0;
        torch::Tensor blocks;
        std::int64_t begin = 0, length = 0; // the short block, when blocks is undefined
    };
    template <typename Each>
    void forEachSegment(int p, Each&& each) const; // each(segment, flat parameter, offset in p)

    NamedTensors m_parameters;
    int m_partitions;
    int m_interval;
    std::vector<std::vector<Segment>> m_segments; // per partition
    std::vector<std::int64_t> m_sizes;            // values per partition
};

} // namespace tessera::gpu
