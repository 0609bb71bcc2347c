// SPDX-License-Identifier: Apache-2.0
#include "train/Sparta.h"

#include <torch/torch.h>

#include <stdexcept>

namespace tessera::gpu {

Sparta::Sparta(NamedTensors parameters, std::uint64_t seed, int partitions, int interval)
    : m_parameters(std::move(parameters))
    , m_partitions(partitions)
    , m_interval(interval) {
    if (partitions < 1 || interval < 1)
        throw std::invalid_argument("Sparta needs at least one partition and a positive interval");
    std::vector<std::pair<std::string, std::int64_t>> sizes;
    for (const auto& [name, tensor] : m_parameters)
        sizes.emplace_back(name, tensor.numel());
    // One deal of every block (a shuffle per parameter), each partition's runs built as it goes:
    // never every partition's slice list at once.
    m_segments.resize(static_cast<std::size_t>(partitions));
    m_sizes.assign(static_cast<std::size_t>(partitions), 0);
    struct Open {
        std::vector<std::int64_t> blocks; // whole blocks of `parameter`, in dealing order
        std::size_t parameter = 0;
    };
    std::vector<Open> open(static_cast<std::size_t>(partitions));
    const auto flush = [&](std::size_t p) {
        Open& run = open[p];
        if (run.blocks.empty())
            return;
        Segment segment;
        segment.parameter = run.parameter;
        segment.blocks =
            torch::tensor(run.blocks, torch::kLong).to(m_parameters[run.parameter].second.device());
        m_segments[p].push_back(std::move(segment));
        run.blocks.clear();
    };
    forEachSpartaSlice(sizes, seed, partitions, [&](int partition, const SpartaSlice& slice) {
        const auto p = static_cast<std::size_t>(partition);
        m_sizes[p] += slice.length;
        if (slice.parameter != open[p].parameter)
            flush(p);
        open[p].parameter = slice.parameter;
        if (slice.length == kBlock) {
            open[p].blocks.push_back(slice.begin / kBlock);
            return;
        }
        flush(p); // the parameter's shorter last block keeps its place in the order
        m_segments[p].push_back(Segment{slice.parameter, torch::Tensor(), slice.begin, slice.length});
    });
    for (std::size_t p = 0; p < open.size(); ++p)
        flush(p);
}

template <typename Each>
void Sparta::forEachSegment(int p, Each&& each) const {
    std::int64_t offset = 0;
    for (const Segment& segment : m_segments.at(static_cast<std::size_t>(p))) {
        const torch::Tensor flat = m_parameters[segment.parameter].second.view({-1});
        each(segment, flat, offset);
        offset += segment.blocks.defined() ? segment.blocks.numel() * kBlock : segment.length;
    }
}

namespace {

// A parameter's whole blocks as rows of kBlock values (a view: writes land in the parameter).
torch::Tensor blockRows(const torch::Tensor& flat) {
    const std::int64_t whole = flat.numel() / Sparta::kBlock;
    return flat.narrow(0, 0, whole * Sparta::kBlock).view({whole, Sparta::kBlock});
}

// The segment's part of a partition-ordered tensor, shaped as the segment's rows.
torch::Tensor rowsOf(const torch::Tensor& values, std::int64_t offset, std::int64_t blocks,
                     const torch::Tensor& like) {
    return values.narrow(0, offset, blocks * Sparta::kBlock)
        .view({blocks, Sparta::kBlock})
        .to(like.device(), like.scalar_type());
}

} // namespace

torch::Tensor Sparta::gather(int p) const {
    std::vector<torch::Tensor> parts;
    torch::NoGradGuard noGrad;
    forEachSegment(p, [&](const Segment& s, const torch::Tensor& flat, std::int64_t) {
        const torch::Tensor values = s.blocks.defined() ? blockRows(flat.detach()).index_select(0, s.blocks)
                                                        : flat.detach().narrow(0, s.begin, s.length);
        parts.push_back(values.reshape({-1}).to(torch::kFloat));
    });
    return parts.empty() ? torch::empty({0}) : torch::cat(parts).cpu();
}

void Sparta::applyDelta(int p, const torch::Tensor& average, const torch::Tensor& snapshot) {
    const std::int64_t size = partitionSize(p);
    if (average.numel() != size || snapshot.numel() != size)
        throw std::invalid_argument("Sparta: average and snapshot must hold the partition's " +
                                    std::to_string(size) + " values");
    torch::NoGradGuard noGrad;
    const torch::Tensor delta = (average - snapshot).reshape({-1});
    forEachSegment(p, [&](const Segment& s, const torch::Tensor& flat, std::int64_t offset) {
        if (s.blocks.defined())
            blockRows(flat).index_add_(0, s.blocks, rowsOf(delta, offset, s.blocks.numel(), flat));
        else
            flat.narrow(0, s.begin, s.length)
                .add_(delta.narrow(0, offset, s.length).to(flat.device(), flat.scalar_type()));
    });
}

void Sparta::scatter(int p, const torch::Tensor& values) {
    const std::int64_t size = partitionSize(p);
    if (values.numel() != size)
        throw std::invalid_argument("Sparta: the values must hold the partition's " + std::to_string(size) +
                                    " values");
    torch::NoGradGuard noGrad;
    const torch::Tensor flatValues = values.reshape({-1});
    forEachSegment(p, [&](const Segment& s, const torch::Tensor& flat, std::int64_t offset) {
        if (s.blocks.defined())
            blockRows(flat).index_copy_(0, s.blocks, rowsOf(flatValues, offset, s.blocks.numel(), flat));
        else
            flat.narrow(0, s.begin, s.length).copy_(flatValues.narrow(0, offset, s.length));
    });
}

std::int64_t Sparta::partitionSize(int p) const {
    return m_sizes.at(static_cast<std::size_t>(p));
}

} // namespace tessera::gpu
