// SPDX-License-Identifier: Apache-2.0
#include "train/Sparta.h"

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

} // namespace

Sparta::Sparta(NamedTensors parameters, std::uint64_t seed, int partitions, int interval)
    : m_parameters(std::move(parameters))
    , m_partitions(partitions)
    , m_interval(interval)
    , m_slices(static_cast<std::size_t>(partitions)) {
    if (partitions < 1 || interval < 1)
        throw std::invalid_argument("Sparta needs at least one partition and a positive interval");
    // A running offset deals each parameter's shuffled blocks round-robin from where the last
    // parameter stopped, so partitions stay balanced to one block even for small tensors.
    std::size_t next = 0;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const auto& [name, tensor] = m_parameters[i];
        const std::int64_t n = tensor.numel();
        const std::int64_t blocks = (n + kBlock - 1) / kBlock;
        std::vector<std::int64_t> order(static_cast<std::size_t>(blocks));
        std::iota(order.begin(), order.end(), 0);
        std::mt19937_64 rng(hashName(name, seed));
        std::shuffle(order.begin(), order.end(), rng);
        for (const std::int64_t b : order) {
            const std::int64_t begin = b * kBlock;
            m_slices[next % m_slices.size()].push_back({i, begin, std::min(kBlock, n - begin)});
            ++next;
        }
    }
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
