// SPDX-License-Identifier: Apache-2.0
#pragma once
// PowerSgdTwoRounds: PowerSGD as published, measured in the simulator against the one-round exchange
// the swarm runs (GradientExchange). Each step, per matrix: P = M̄·Q (Q from the last step, warm),
// P̂ = orth(P), Q = M̄ᵀ·P̂, and every replica applies the update P̂·Qᵀ = P̂P̂ᵀ·M̄ — the projection
// onto a basis found from this step's mean gradient (the one-round exchange projects onto the basis
// of the step before). Error feedback as GradientExchange keeps it: replica r keeps
// c_r − P̂P̂ᵀ·c_r, c_r its gradient sum plus memory. Sim only: in the swarm the second
// multiplication is a second round trip through the coordinator every step.

#include "train/GradientExchange.h"

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace tessera::gpu {

class PowerSgdTwoRounds {
public:
    PowerSgdTwoRounds(const std::vector<std::vector<std::int64_t>>& shapes, int rank, std::uint64_t seed,
                      int replicas);
    // parameters[r]: replica r's parameters (their .grad(): gradient sums over microbatches[r]). Writes
    // the step's update (the mean gradient, compressed) into every replica's .grad() and returns
    // ‖update‖². A replica that processed nothing keeps all of its gradient in its memory.
    double exchange(const std::vector<std::vector<torch::Tensor>>& parameters,
                    const std::vector<int>& microbatches);

    // What error feedback carries for replica r, per parameter (m × n sums).
    const std::vector<torch::Tensor>& memory(int replica) const { return m_memory.at(std::size_t(replica)); }

private:
    GradientLayout m_layout;
    std::uint64_t m_seed;
    std::vector<torch::Tensor> m_q;                   // per low-rank entry, n × r
    std::vector<std::vector<torch::Tensor>> m_memory; // [replica][entry], m × n
};

} // namespace tessera::gpu
