// SPDX-License-Identifier: Apache-2.0
#include "train/PowerSgdRounds.h"

#include <torch/torch.h>

namespace tessera::gpu {

PowerSgdTwoRounds::PowerSgdTwoRounds(const std::vector<std::vector<std::int64_t>>& shapes, int rank,
                                     std::uint64_t seed, int replicas)
    : m_layout(shapes, rank)
    , m_seed(seed)
    , m_memory(static_cast<std::size_t>(replicas)) {
    const auto& entries = m_layout.entries();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        m_q.push_back(entries[i].rank
                          ? initialLeftBasis(seed, i, entries[i].n, entries[i].rank).to(torch::kFloat)
                          : torch::Tensor());
        for (auto& memory : m_memory)
            memory.push_back(torch::zeros({entries[i].m, entries[i].n}));
    }
}

double PowerSgdTwoRounds::exchange(const std::vector<std::vector<torch::Tensor>>& parameters,
                                   const std::vector<int>& microbatches) {
    torch::NoGradGuard noGrad;
    int total = 0;
    for (int m : microbatches)
        total += m;
    double squared = 0;
    const auto& entries = m_layout.entries();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto& e = entries[i];
        torch::Tensor mean = torch::zeros({e.m, e.n});
        std::vector<torch::Tensor> carried; // c_r per replica
        for (std::size_t r = 0; r < parameters.size(); ++r) {
            const torch::Tensor& g = parameters[r][i].grad();
            carried.push_back(m_memory[r][i] + (g.defined() ? g.detach().reshape({e.m, e.n}).to(torch::kFloat)
                                                            : torch::zeros({e.m, e.n})));
            if (microbatches[r] > 0)
                mean += carried.back();
        }
        if (total > 0)
            mean /= double(total);
        torch::Tensor update = mean, basis;
        if (e.rank > 0 && total > 0) {
            basis = orthonormalColumns(torch::matmul(mean, m_q[i]), m_seed + i).to(torch::kFloat); // m × r
            m_q[i] = torch::matmul(mean.t(), basis);                                               // n × r
            update = torch::matmul(basis, m_q[i].t());
        }
        for (std::size_t r = 0; r < parameters.size(); ++r) {
            if (total == 0 || microbatches[r] == 0)
                m_memory[r][i] = carried[r]; // not counted: all of it waits
            else
                m_memory[r][i] = basis.defined()
                                     ? carried[r] - torch::matmul(basis, torch::matmul(basis.t(), carried[r]))
                                     : torch::zeros_like(carried[r]);
            parameters[r][i].mutable_grad() =
                update.reshape(parameters[r][i].sizes()).to(parameters[r][i].dtype()).clone();
        }
        squared += update.square().sum().item<double>();
    }
    return squared;
}

} // namespace tessera::gpu
