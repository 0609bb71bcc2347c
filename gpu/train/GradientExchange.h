// SPDX-License-Identifier: Apache-2.0
#pragma once
// GradientExchange: the replicas of a stage average their gradients at every step, compressed.
// Internal to gpu/ (torch tensors); the coordinator reaches it through GradientCombiner's
// torch-free facade in engine/, the node through StageEngine.
//
// Each matrix-shaped gradient M (m × n, the parameter flattened after its first dimension) can travel
// as a rank-r PowerSGD pair, in PowerSGD's two rounds a step (BENCHMARKS.md "PowerSGD's two rounds":
// the one-round exchange this replaced, which projected onto the previous step's basis, cost +10.8%
// of loss at rank 16 where two rounds cost +1.8% at 400 steps and +0.0% at 2,000):
//   1. replica r adds its error memory e_r to what it accumulated, c_r = g_r + e_r, and sends
//      P_r = c_r·Q / m_r (m_r its microbatches; Q, n × r, the warm start every replica holds from
//      the previous round, seeded before the first). The combiner averages them weighted by m_r and
//      answers the basis P̂ = orth(P̄) (m × r, fp64 Gram–Schmidt: the same bits everywhere).
//   2. replica r sends Q_r = c_rᵀ·P̂ / m_r (and the dense entries' c_r / m_r); the combiner averages
//      them (→ Q̄) and answers the result [P̂ | Q̄]. The update is P̂·Q̄ᵀ = P̂P̂ᵀ·(Σ c_r / Σ m_r): the
//      mean gradient projected on a basis found from this step's own mean.
// Every replica applies the same update, keeps e_r = c_r − P̂P̂ᵀ·c_r (what the projection left out:
// the residuals of all replicas add up to exactly what the average lost) and takes Q̄ as the next
// warm start. Bytes per replica and step: r·(m + n) up, r·(2m + n) down — as PowerSGD's.
//
// Measured (BENCHMARKS.md "Replicas that learn as one"): the dense exchange (in 8 bits on the
// coordinator: see below) learns as fp32 does and is the default; the low rank is the option for
// stages whose dense gradients cannot travel.
//
// Vectors (norm gains) and matrices too small for rank r to pay travel dense (their sums divided by
// m_r; the average is exact). Rank 0 sends everything dense: exact gradient averaging.
//
// Dense exchanges can travel in fewer bits (base/BlockQuant: 8 or 4 bits and a scale per 256 values,
// 3.9× or 7.8× fewer bytes), with error feedback on both sides: a replica's share is rounded where
// it is made and what rounding lost stays in its memory for the next round; the combiner rounds the
// result the same way and keeps what that lost for its next result. Every replica and the
// coordinator's checkpoint apply the rounded result, so replicas stay equal.
//
// A replica that was not counted in a round (it missed the deadline, held another round's warm
// start, processed nothing, was on probation or its share failed a check) still applies the round's
// update — replicas stay equal. At a low rank it keeps all of c_r in its memory for the next round
// (error feedback carries it); a dense exchange drops it (its memory is zeroed): carried, k rounds left
// out came back as one share k times the size, which the combiner outvoted and the share check failed.
//
// The norm of the update is exact from the result alone (‖P̂Q̄ᵀ‖ = ‖Q̄‖, P̂ orthonormal), so the
// combiner measures each stage's gradient norm itself: no replica reports it.

#include "base/Result.h"

#include <torch/types.h>

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::gpu {

// Where each parameter's gradient lives in a share and in a result, and how it travels. The same
// on every replica and on the combiner: a function of the shapes and the rank only.
class GradientLayout {
public:
    struct Entry {
        std::int64_t m = 0, n = 0; // the gradient as an m × n matrix (n = 1 for vectors)
        std::int64_t rank = 0;     // 0: dense
        std::int64_t basisOffset = 0, shareOffset = 0, resultOffset = 0;
    };

    GradientLayout() = default;
    GradientLayout(const std::vector<std::vector<std::int64_t>>& shapes, int rank);

    const std::vector<Entry>& entries() const { return m_entries; }
    int rank() const { return m_rank; }
    // fp32 values of the first round's share (P_r) and of the basis P̂ answered: r·m per low-rank entry.
    std::int64_t basisSize() const { return m_basisSize; }
    std::int64_t shareSize() const { return m_shareSize; }       // fp32 values of the (second) share
    std::int64_t resultSize() const { return m_resultSize; }     // fp32 values every replica receives
    std::int64_t gradientSize() const { return m_gradientSize; } // fp32 values of the whole gradient
    // Whether any entry travels low rank (else every share is exact whatever basis its sender holds).
    bool lowRank() const { return m_lowRank; }

private:
    std::vector<Entry> m_entries;
    int m_rank = 0;
    bool m_lowRank = false;
    std::int64_t m_basisSize = 0, m_shareSize = 0, m_resultSize = 0, m_gradientSize = 0;
};

// The warm start of low-rank entry `index` before any round: orthonormal (Q, n × r), seeded,
// identical wherever it is made.
torch::Tensor initialWarmStart(std::uint64_t seed, std::size_t index, std::int64_t n, std::int64_t rank);
// Gram–Schmidt in fp64 (reproducible on every machine: no BLAS): the columns of x made orthonormal; a
// column that vanishes is replaced by a seeded one.
torch::Tensor orthonormalColumns(const torch::Tensor& x, std::uint64_t seed);

// One replica's side: its error memory and warm start over the live parameter tensors (gradients in
// p.grad(), fp32 masters).
class GradientCompressor {
public:
    // memoryDecay: what of the error memory carries into the next round (1: all, error feedback
    // proper; 0: none, the projection's loss is dropped).
    // bits: what the share travels in (32, or 8 or 4 with rank 0: base/BlockQuant).
    GradientCompressor(std::vector<torch::Tensor> parameters, int rank, std::uint64_t seed,
                       double memoryDecay = 1.0, int bits = 32);

    const GradientLayout& layout() const { return m_layout; }
    int bits() const { return m_bits; }
    // The round whose result this replica last applied (its warm start comes from it); 0: the seeded one.
    std::int64_t basisRound() const { return m_basisRound; }
    // Back to the seeded warm start (the combiner restarted); the memory stays.
    void resetBasis();

    // Moves the gradients accumulated since the last round (sums over microbatches) into the
    // memory and zeroes them, so the next step accumulates afresh while this one is exchanged.
    void collect();
    // The first round's share of what collect() gathered (P_r, layout().basisSize() values; none when
    // nothing travels low rank), per microbatch: `microbatches` must be ≥ 1.
    std::vector<float> basisShare(int microbatches);
    // The (second) share: Q_r on `basis` (the P̂ the combiner answered the first round with; empty
    // when nothing travels low rank) and the dense entries, per microbatch. In fewer bits: the values
    // the receiver decodes (what rounding lost is kept for apply()). Refuses a basis of the wrong
    // size or with values that are not finite.
    Result<std::vector<float>> share(int microbatches, std::span<const float> basis = {});
    // Writes the round's mean gradient into p.grad(), settles the memory (included: what the
    // projection left out; otherwise all of it stays) and takes the next warm start from the result.
    Status apply(std::span<const float> result, bool included, std::int64_t round);
    // ‖memory‖²: what error feedback still carries; the memory itself (per parameter, m × n sums).
    double memorySquaredNorm() const;
    const std::vector<torch::Tensor>& memory() const { return m_memory; }

private:
    std::vector<torch::Tensor> m_parameters;
    GradientLayout m_layout;
    std::uint64_t m_seed;
    double m_memoryDecay = 1.0;
    std::vector<torch::Tensor> m_memory; // per entry, m × n fp32 (sums, not means)
    std::vector<torch::Tensor> m_warm;   // Q per low-rank entry, n × r (undefined for dense)
    std::int64_t m_basisRound = 0;
    int m_bits = 32;
    std::vector<torch::Tensor>
        m_rounding; // fewer bits: per entry, what the last share's rounding lost (sums)
};

// The combiner's side (the coordinator, the simulator): from the replicas' weighted mean shares, the
// basis of the first round and the result every replica applies. Holds P̂ between the two.
class GradientRoundCombiner {
public:
    // bits: what the result travels in (32, or 8 or 4 for a dense layout).
    GradientRoundCombiner(GradientLayout layout, std::uint64_t seed, int bits = 32);

    const GradientLayout& layout() const { return m_layout; }
    int bits() const { return m_bits; }
    std::int64_t round() const { return m_round; } // results made so far (the warm start's round)
    // meanBasisShare: Σ_r m_r·P_r / Σ_r m_r. Returns P̂ (layout().basisSize() values), which the next
    // result() projects on. Only where the layout travels low rank.
    std::vector<float> basis(std::span<const float> meanBasisShare);
    // meanShare: Σ_r m_r·share_r / Σ_r m_r (low rank: built on the last basis()). Returns the result
    // and sets *squaredNorm to ‖update‖².
    std::vector<float> result(std::span<const float> meanShare, double* squaredNorm);
    // Back to the seeded warm start, round 0 (no replica could share on the current one).
    void reset();

private:
    GradientLayout m_layout;
    std::uint64_t m_seed;
    std::vector<float> m_basis; // P̂ of the round in progress (low rank), empty before basis()
    std::int64_t m_round = 0;
    int m_bits = 32;
    std::vector<float> m_rounding; // fewer bits: what the last result's rounding lost
};

} // namespace tessera::gpu
