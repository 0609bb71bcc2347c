// SPDX-License-Identifier: Apache-2.0
#include "train/Sparta.h"

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
    m_slices = dealSpartaPartitions(sizes, seed, partitions);
}

torch::Tensor Sparta::gather(int p) const {
    std::vector<torch::Tensor> parts;
    parts.reserve(m_slices.at(p).size());
    torch::NoGradGuard noGrad;
    for (const Slice& s : m_slices.at(p))
        parts.push_back(m_parameters[s.parameter]
                            .second.detach()
                            .reshape({-1})
                            .narrow(0, s.begin, s.length)
                            .to(torch::kFloat));
    return parts.empty() ? torch::empty({0}) : torch::cat(parts).cpu();
}

void Sparta::applyDelta(int p, const torch::Tensor& average, const torch::Tensor& snapshot) {
    const std::int64_t size = partitionSize(p);
    if (average.numel() != size || snapshot.numel() != size)
        throw std::invalid_argument("Sparta: average and snapshot must hold the partition's " +
                                    std::to_string(size) + " values");
    torch::NoGradGuard noGrad;
    const torch::Tensor delta = (average - snapshot).reshape({-1});
    std::int64_t offset = 0;
    for (const Slice& s : m_slices.at(p)) {
        auto& tensor = m_parameters[s.parameter].second;
        auto flat = tensor.view({-1}).narrow(0, s.begin, s.length);
        flat.add_(delta.narrow(0, offset, s.length).to(tensor.device(), tensor.scalar_type()));
        offset += s.length;
    }
}

void Sparta::scatter(int p, const torch::Tensor& values) {
    const std::int64_t size = partitionSize(p);
    if (values.numel() != size)
        throw std::invalid_argument("Sparta: the values must hold the partition's " + std::to_string(size) +
                                    " values");
    torch::NoGradGuard noGrad;
    const torch::Tensor flatValues = values.reshape({-1});
    std::int64_t offset = 0;
    for (const Slice& s : m_slices.at(p)) {
        m_parameters[s.parameter]
            .second.view({-1})
            .narrow(0, s.begin, s.length)
            .copy_(flatValues.narrow(0, offset, s.length));
        offset += s.length;
    }
}

std::int64_t Sparta::partitionSize(int p) const {
    std::int64_t n = 0;
    for (const Slice& s : m_slices.at(p))
        n += s.length;
    return n;
}

} // namespace tessera::gpu
