// SPDX-License-Identifier: Apache-2.0
#include "train/GradientExchange.h"

#include "base/BlockQuant.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::gpu {

namespace {

std::uint64_t splitmix(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Uniform in [-1, 1), the same on every machine.
torch::Tensor seededMatrix(std::uint64_t seed, std::int64_t rows, std::int64_t cols) {
    auto out = torch::empty({rows, cols}, torch::kDouble);
    double* v = out.data_ptr<double>();
    std::uint64_t state = seed;
    for (std::int64_t i = 0; i < rows * cols; ++i)
        v[i] = static_cast<double>(splitmix(state) >> 11) * 0x1.0p-52 - 1.0;
    return out;
}

std::uint64_t entrySeed(std::uint64_t seed, std::size_t index, std::uint64_t side) {
    return seed ^ (0x47524144ull << 24) ^ (static_cast<std::uint64_t>(index) * 0x100000001B3ull) ^
           (side << 60);
}

torch::Tensor cpuFloats(std::span<const float> values, std::int64_t offset, std::int64_t rows,
                        std::int64_t cols) {
    return torch::from_blob(const_cast<float*>(values.data() + offset), {rows, cols}, torch::kFloat);
}

void append(std::vector<float>& out, const torch::Tensor& t) {
    const torch::Tensor c = t.to(torch::kCPU, torch::kFloat).contiguous();
    const float* p = c.data_ptr<float>();
    out.insert(out.end(), p, p + c.numel());
}

} // namespace

GradientLayout::GradientLayout(const std::vector<std::vector<std::int64_t>>& shapes, int rank)
    : m_rank(rank) {
    for (const auto& shape : shapes) {
        Entry e;
        std::int64_t numel = 1;
        for (const std::int64_t d : shape)
            numel *= d;
        e.m = shape.size() >= 2 ? shape[0] : numel;
        e.n = shape.size() >= 2 && e.m > 0 ? numel / e.m : 1;
        const std::int64_t r = std::min<std::int64_t>({rank, e.m, e.n});
        // Low rank only where it sends at most half of the dense values.
        if (rank > 0 && shape.size() >= 2 && r > 0 && 2 * r * (e.m + e.n) <= e.m * e.n)
            e.rank = r;
        m_lowRank = m_lowRank || e.rank > 0;
        e.basisOffset = m_basisSize;
        e.shareOffset = m_shareSize;
        e.resultOffset = m_resultSize;
        m_basisSize += e.rank * e.m;
        m_shareSize += e.rank ? e.rank * e.n : numel;
        m_resultSize += e.rank ? e.rank * (e.m + e.n) : numel;
        m_gradientSize += numel;
        m_entries.push_back(e);
    }
}

torch::Tensor orthonormalColumns(const torch::Tensor& x, std::uint64_t seed) {
    torch::Tensor q = x.to(torch::kCPU, torch::kDouble).contiguous().clone();
    const std::int64_t rows = q.size(0), cols = q.size(1);
    double* a = q.data_ptr<double>();
    auto at = [&](std::int64_t i, std::int64_t j) -> double& { return a[i * cols + j]; };
    double scale = 0;
    for (std::int64_t i = 0; i < rows * cols; ++i)
        scale = std::max(scale, std::abs(a[i]));
    std::uint64_t state = seed;
    for (std::int64_t j = 0; j < cols; ++j) {
        for (int attempt = 0; attempt < 4; ++attempt) {
            for (int pass = 0; pass < 2; ++pass) // twice is enough (Kahan's "twice is enough")
                for (std::int64_t k = 0; k < j; ++k) {
                    double dot = 0;
                    for (std::int64_t i = 0; i < rows; ++i)
                        dot += at(i, k) * at(i, j);
                    for (std::int64_t i = 0; i < rows; ++i)
                        at(i, j) -= dot * at(i, k);
                }
            double norm = 0;
            for (std::int64_t i = 0; i < rows; ++i)
                norm += at(i, j) * at(i, j);
            norm = std::sqrt(norm);
            if (norm > 1e-10 * std::max(scale, 1e-30) && std::isfinite(norm)) {
                for (std::int64_t i = 0; i < rows; ++i)
                    at(i, j) /= norm;
                break;
            }
            // Vanished (or degenerate): a seeded direction instead.
            for (std::int64_t i = 0; i < rows; ++i)
                at(i, j) = static_cast<double>(splitmix(state) >> 11) * 0x1.0p-52 - 1.0;
            scale = 1;
        }
    }
    return q.to(torch::kFloat);
}

torch::Tensor initialWarmStart(std::uint64_t seed, std::size_t index, std::int64_t n, std::int64_t rank) {
    return orthonormalColumns(seededMatrix(entrySeed(seed, index, 1), n, rank), entrySeed(seed, index, 2));
}

namespace {

std::vector<std::vector<std::int64_t>> shapesOf(const std::vector<torch::Tensor>& parameters) {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const torch::Tensor& p : parameters)
        shapes.emplace_back(p.sizes().begin(), p.sizes().end());
    return shapes;
}

} // namespace

GradientCompressor::GradientCompressor(std::vector<torch::Tensor> parameters, int rank, std::uint64_t seed,
                                       double memoryDecay, int bits)
    : m_parameters(std::move(parameters))
    , m_layout(shapesOf(m_parameters), rank)
    , m_seed(seed)
    , m_memoryDecay(memoryDecay)
    , m_bits(bits) {
    if (!validQuantBits(bits) || (bits != 32 && m_layout.lowRank()))
        throw std::invalid_argument("a gradient exchange in " + std::to_string(bits) +
                                    " bits: 32, or 8 or 4 with rank 0");
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const GradientLayout::Entry& e = m_layout.entries()[i];
        m_memory.push_back(torch::zeros(
            {e.m, e.n}, torch::TensorOptions().dtype(torch::kFloat).device(m_parameters[i].device())));
    }
    m_warm.resize(m_parameters.size());
    resetBasis();
}

void GradientCompressor::resetBasis() {
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const GradientLayout::Entry& e = m_layout.entries()[i];
        if (e.rank == 0)
            continue;
        m_warm[i] = initialWarmStart(m_seed, i, e.n, e.rank).to(m_parameters[i].device());
    }
    m_basisRound = 0;
}

void GradientCompressor::collect() {
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        torch::Tensor& p = m_parameters[i];
        if (!p.grad().defined())
            continue;
        m_memory[i].add_(p.grad().reshape(m_memory[i].sizes()).to(torch::kFloat));
        p.mutable_grad().zero_();
    }
}

std::vector<float> GradientCompressor::basisShare(int microbatches) {
    torch::NoGradGuard noGrad;
    if (microbatches < 1)
        throw std::invalid_argument("a gradient share needs at least one microbatch");
    std::vector<float> out;
    out.reserve(static_cast<std::size_t>(m_layout.basisSize()));
    for (std::size_t i = 0; i < m_parameters.size(); ++i)
        if (m_layout.entries()[i].rank > 0)
            append(out, m_memory[i].mm(m_warm[i]) * (1.0 / microbatches)); // P_r = c·Q / m_r, m × r
    return out;
}

Result<std::vector<float>> GradientCompressor::share(int microbatches, std::span<const float> basis) {
    torch::NoGradGuard noGrad;
    if (microbatches < 1)
        throw std::invalid_argument("a gradient share needs at least one microbatch");
    if (static_cast<std::int64_t>(basis.size()) != m_layout.basisSize())
        return makeError("a gradient basis of " + std::to_string(basis.size()) + " values, " +
                         std::to_string(m_layout.basisSize()) + " expected");
    for (const float v : basis)
        if (!std::isfinite(v))
            return makeError("the gradient basis holds a value that is not finite");
    const double inverse = 1.0 / microbatches;
    std::vector<float> out;
    out.reserve(static_cast<std::size_t>(m_layout.shareSize()));
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const GradientLayout::Entry& e = m_layout.entries()[i];
        const torch::Tensor& c = m_memory[i];
        if (e.rank == 0) {
            append(out, c * inverse);
            continue;
        }
        const torch::Tensor left = cpuFloats(basis, e.basisOffset, e.m, e.rank).to(c.device(), false, true);
        append(out, c.t().mm(left) * inverse); // Q_r = cᵀ·P̂ / m_r, n × r
    }
    if (m_bits != 32) {
        // Rounded as the receiver will decode it; the memory keeps c − m_r·share for apply().
        roundTrip(out, m_bits);
        m_rounding.assign(m_parameters.size(), torch::Tensor());
        for (std::size_t i = 0; i < m_parameters.size(); ++i) {
            const GradientLayout::Entry& e = m_layout.entries()[i];
            m_rounding[i] =
                m_memory[i] - cpuFloats(out, e.shareOffset, e.m, e.n).to(m_memory[i].device()) * microbatches;
        }
    }
    return out;
}

Status GradientCompressor::apply(std::span<const float> result, bool included, std::int64_t round) {
    if (static_cast<std::int64_t>(result.size()) != m_layout.resultSize())
        return makeError("a gradient result of " + std::to_string(result.size()) + " values, " +
                         std::to_string(m_layout.resultSize()) + " expected");
    for (const float v : result)
        if (!std::isfinite(v))
            return makeError("the gradient result holds a value that is not finite");
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const GradientLayout::Entry& e = m_layout.entries()[i];
        torch::Tensor& p = m_parameters[i];
        const torch::Device device = p.device();
        torch::Tensor update;
        if (e.rank == 0) {
            update =
                cpuFloats(result, e.resultOffset, e.m, e.n).to(device, /*non_blocking=*/false, /*copy=*/true);
            // Counted: what the share's rounding lost is the next round's. Not counted (a missed
            // deadline, probation, a failed check): the step's gradient is dropped, not carried — carried,
            // a node left out for k steps sent k steps of stale gradients at once, a share that was then
            // outvoted or failed its check, and was left out again (issue 41: honest nodes struck so).
            if (included && i < m_rounding.size() && m_rounding[i].defined())
                m_memory[i].copy_(m_rounding[i]);
            else
                m_memory[i].zero_();
        } else {
            const torch::Tensor left = cpuFloats(result, e.resultOffset, e.m, e.rank).to(device, false, true);
            const torch::Tensor right =
                cpuFloats(result, e.resultOffset + e.m * e.rank, e.n, e.rank).to(device, false, true);
            update = left.mm(right.t());
            if (included) {
                m_memory[i].sub_(left.mm(left.t().mm(m_memory[i])));
                if (m_memoryDecay != 1.0)
                    m_memory[i].mul_(m_memoryDecay);
            }
            m_warm[i] = right; // Q̄: the next round's warm start
        }
        // A view would not survive zero_grad (it detaches in place): a tensor of its own.
        p.mutable_grad() = update.reshape(p.sizes()).to(p.scalar_type()).clone();
    }
    m_basisRound = round;
    m_rounding.clear();
    return {};
}

double GradientCompressor::memorySquaredNorm() const {
    double sum = 0;
    for (const torch::Tensor& m : m_memory)
        sum += m.to(torch::kDouble).pow(2).sum().item<double>();
    return sum;
}

GradientRoundCombiner::GradientRoundCombiner(GradientLayout layout, std::uint64_t seed, int bits)
    : m_layout(std::move(layout))
    , m_seed(seed)
    , m_bits(bits) {
    if (!validQuantBits(bits) || (bits != 32 && m_layout.lowRank()))
        throw std::invalid_argument("a gradient exchange in " + std::to_string(bits) +
                                    " bits: 32, or 8 or 4 with rank 0");
    reset();
}

void GradientRoundCombiner::reset() {
    m_basis.clear();
    m_round = 0;
}

std::vector<float> GradientRoundCombiner::basis(std::span<const float> meanBasisShare) {
    if (static_cast<std::int64_t>(meanBasisShare.size()) != m_layout.basisSize())
        throw std::invalid_argument("a mean basis share of the wrong size");
    m_basis.clear();
    m_basis.reserve(meanBasisShare.size());
    for (std::size_t i = 0; i < m_layout.entries().size(); ++i) {
        const GradientLayout::Entry& e = m_layout.entries()[i];
        if (e.rank > 0)
            append(m_basis,
                   orthonormalColumns(cpuFloats(meanBasisShare, e.basisOffset, e.m, e.rank),
                                      entrySeed(m_seed, i, 4) ^ static_cast<std::uint64_t>(m_round)));
    }
    return m_basis;
}

std::vector<float> GradientRoundCombiner::result(std::span<const float> meanShare, double* squaredNorm) {
    if (static_cast<std::int64_t>(meanShare.size()) != m_layout.shareSize())
        throw std::invalid_argument("a mean share of the wrong size");
    if (static_cast<std::int64_t>(m_basis.size()) != m_layout.basisSize())
        throw std::logic_error("a low-rank result before its round's basis");
    std::vector<float> out;
    out.reserve(static_cast<std::size_t>(m_layout.resultSize()));
    double norm = 0;
    ++m_round;
    if (m_bits != 32) {
        // Dense: the result is the mean, plus what the last one's rounding lost, rounded as every
        // replica will decode it.
        out.assign(meanShare.begin(), meanShare.end());
        if (m_rounding.size() == out.size())
            for (std::size_t k = 0; k < out.size(); ++k)
                out[k] += m_rounding[k];
        m_rounding = out;
        roundTrip(out, m_bits);
        for (std::size_t k = 0; k < out.size(); ++k) {
            m_rounding[k] -= out[k];
            norm += double(out[k]) * out[k];
        }
        if (squaredNorm)
            *squaredNorm = norm;
        return out;
    }
    for (std::size_t i = 0; i < m_layout.entries().size(); ++i) {
        const GradientLayout::Entry& e = m_layout.entries()[i];
        const float* share = meanShare.data() + e.shareOffset;
        const std::int64_t count = e.rank ? e.n * e.rank : e.m * e.n;
        for (std::int64_t k = 0; k < count; ++k)
            norm += double(share[k]) * share[k]; // ‖P̂Q̄ᵀ‖ = ‖Q̄‖: P̂ is orthonormal
        if (e.rank)
            out.insert(out.end(), m_basis.begin() + e.basisOffset,
                       m_basis.begin() + e.basisOffset + e.m * e.rank);
        out.insert(out.end(), share, share + count);
    }
    m_basis.clear();
    if (squaredNorm)
        *squaredNorm = norm;
    return out;
}

} // namespace tessera::gpu
