// SPDX-License-Identifier: Apache-2.0
#include "codec/SubspaceCodec.h"

#include "codec/WirePacking.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace tessera::gpu {

namespace {

bool supported(Dtype dtype) {
    return dtype == Dtype::I8 || dtype == Dtype::F16 || dtype == Dtype::F32;
}

SubspaceBasis onDevice(SubspaceBasis basis, torch::Device device) {
    basis.basis = basis.basis.to(device);
    if (basis.fixedEmbedding.defined())
        basis.fixedEmbedding = basis.fixedEmbedding.to(device);
    return basis;
}

std::string coefficients(Dtype dtype) {
    return dtype == Dtype::I8 ? "int8 (fp32 scale per token)" : std::string(dtypeName(dtype));
}

} // namespace

Result<std::unique_ptr<SubspaceCodec>> SubspaceCodec::create(const ModelConfig& config,
                                                             const CodecOptions& options) {
    if (auto s = checkOptions(config, options); !s)
        return makeError(s.message());
    try {
        return create(config, options, makeSubspaceBasis(config));
    } catch (const std::exception& e) {
        return makeError(std::string("codec subspace: cannot build the basis: ") + e.what());
    }
}

Result<std::unique_ptr<SubspaceCodec>>
SubspaceCodec::create(const ModelConfig& config, const CodecOptions& options, SubspaceBasis basis) {
    if (auto s = checkOptions(config, options); !s)
        return makeError(s.message());
    if (config.codec != CodecKind::Subspace)
        return makeError(
            "codec subspace: the model must be trained with codec=subspace (its residual stream is "
            "only then in span(U))");
    const Dtype activation = options.activationDtype.value_or(Dtype::I8);
    const Dtype gradient = options.gradientDtype.value_or(Dtype::I8);
    if (!supported(activation) || !supported(gradient))
        return makeError("codec subspace: coefficients travel as int8, fp16 or fp32");
    const std::int64_t d = config.dModel, k = config.subspaceDim();
    const auto& u = basis.basis;
    const auto& e = basis.fixedEmbedding;
    if (!u.defined() || u.dim() != 2 || u.size(0) != d || u.size(1) != k ||
        u.scalar_type() != torch::kFloat ||
        (e.defined() && (e.dim() != 2 || e.size(0) != config.vocabSize || e.size(1) != d ||
                         e.scalar_type() != torch::kFloat)))
        return makeError(
            "codec subspace: the basis does not match the model (U must be fp32 [d_model, k], E fp32 "
            "[vocab_size, d_model])");
    return std::unique_ptr<SubspaceCodec>(
        new SubspaceCodec(config, options, std::move(basis), activation, gradient));
}

SubspaceCodec::SubspaceCodec(const ModelConfig& config, const CodecOptions& options, SubspaceBasis basis,
                             Dtype activation, Dtype gradient)
    : Codec(config, options)
    , m_basis(onDevice(std::move(basis), options.device))
    , m_basisT(m_basis.basis.t().contiguous())
    , m_activation(activation)
    , m_gradient(gradient) {}

torch::Tensor SubspaceCodec::embedded(const torch::Tensor& ids) const {
    // ids on the CPU; E's rows are made on the device (seeded per token).
    const torch::Device device = options().device;
    return m_basis.fixedEmbedding.defined() ? m_basis.fixedEmbedding.index_select(0, ids.to(device))
                                            : fixedEmbeddingRows(config(), ids, device);
}

std::string SubspaceCodec::describe() const {
    return "subspace k=" + std::to_string(config().subspaceDim()) + ", activations " +
           coefficients(m_activation) + ", gradients " + coefficients(m_gradient);
}

Codec::Layout SubspaceCodec::layout(PayloadKind kind) const {
    return {kind == PayloadKind::Activation ? m_activation : m_gradient,
            static_cast<std::uint32_t>(config().subspaceDim()), 0};
}

Status SubspaceCodec::checkLayout(const FrameHeader& header) const {
    if (!supported(header.dtype))
        return makeError("codec payload 'subspace' carries " + std::string(dtypeName(header.dtype)) +
                         " coefficients; it can carry int8, fp16 or fp32");
    if (header.rank != std::uint32_t(config().subspaceDim()))
        return makeError("codec payload has " + std::to_string(header.rank) +
                         " subspace coefficients per token, this model's k (d_model / subspace_ratio) is " +
                         std::to_string(config().subspaceDim()));
    if (header.block != 0)
        return makeError("codec payload 'subspace' has a block size; its int8 scales are per token");
    return {};
}

std::uint64_t SubspaceCodec::valueBytes(const FrameHeader& header) const {
    const std::uint64_t scales = header.dtype == Dtype::I8 ? sizeof(float) : 0;
    return header.tokens() * (header.rank * dtypeSize(header.dtype) + scales);
}

void SubspaceCodec::encodeValues(PayloadKind kind, const torch::Tensor& rows, const torch::Tensor& ids,
                                 std::vector<std::uint8_t>& out) const {
    // c = Uᵀ(hidden − E[tok]), row-major: (hidden − E[tok]) · U.
    const auto& u = m_basis.basis;
    const auto c = kind == PayloadKind::Activation ? at::mm(rows - embedded(ids), u) : at::mm(rows, u);
    const Dtype dtype = layout(kind).dtype;
    if (dtype == Dtype::I8) {
        const auto q = wire::quantiseRows(c);
        wire::appendTensor(out, q.scales);
        wire::appendTensor(out, q.values);
    } else {
        wire::appendTensor(out, c.to(wire::scalarType(dtype)));
    }
}

Result<torch::Tensor> SubspaceCodec::coefficientRows(const FrameHeader& header,
                                                     std::span<const std::uint8_t> values) const {
    const std::int64_t n = header.tokens(), k = header.rank;
    if (header.dtype == Dtype::I8) {
        const auto scaleBytes = static_cast<std::size_t>(n) * sizeof(float);
        const auto scales = wire::readTensor(values.first(scaleBytes), torch::kFloat, n);
        if (!wire::scalesValid(scales))
            return makeError("codec payload 'subspace' has a negative, infinite or NaN scale");
        return wire::dequantiseRows(scales.to(options().device),
                                    wire::readTensor(values.subspan(scaleBytes), torch::kChar, n * k)
                                        .view({n, k})
                                        .to(options().device));
    }
    return wire::readTensor(values, wire::scalarType(header.dtype), n * k)
        .view({n, k})
        .to(options().device, torch::kFloat);
}

Result<torch::Tensor> SubspaceCodec::decodeValues(const FrameHeader& header,
                                                  std::span<const std::uint8_t> values,
                                                  const torch::Tensor& ids) const {
    Result<torch::Tensor> c = coefficientRows(header, values);
    if (!c)
        return c.error();
    // hidden = E[tok] + U·c; a gradient comes back as U·(Uᵀg).
    if (header.kind == PayloadKind::Activation)
        return at::addmm(embedded(ids), *c, m_basisT);
    return at::mm(*c, m_basisT);
}

Result<torch::Tensor> SubspaceCodec::checkValues(const FrameHeader& header,
                                                 std::span<const std::uint8_t> values,
                                                 const torch::Tensor& ids) const {
    Result<torch::Tensor> c = coefficientRows(header, values);
    if (!c || header.kind != PayloadKind::Activation)
        return c;
    return at::constant_pad_nd(*c, {0, 1}) + tokenCheckRows(ids);
}

torch::Tensor SubspaceCodec::tokenCheckRows(const torch::Tensor& ids) const {
    const std::lock_guard lock(m_tokenRowsMutex);
    const std::int64_t k = m_basis.basis.size(1);
    if (!m_tokenRows.defined()) {
        m_tokenRows =
            torch::zeros({config().vocabSize, k + 1}, torch::TensorOptions().device(options().device));
        m_known.assign(std::size_t(config().vocabSize), false);
    }
    const torch::Tensor flat = ids.to(torch::kInt64).contiguous();
    const std::int64_t* id = flat.data_ptr<std::int64_t>();
    std::vector<std::int64_t> missing;
    for (std::int64_t i = 0; i < flat.numel(); ++i)
        if (!m_known[std::size_t(id[i])])
            missing.push_back(id[i]);
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    if (!missing.empty()) {
        const torch::Tensor newIds = torch::tensor(missing, torch::kInt64);
        // In fp64, so that each token's row is exact to fp32 (it is computed once and read forever).
        const torch::Tensor e = embedded(newIds).to(torch::kDouble);
        const torch::Tensor projected = at::mm(e, m_basis.basis.to(torch::kDouble));
        const torch::Tensor residual =
            (e - at::mm(projected, m_basisT.to(torch::kDouble))).norm(2, {1}, true);
        m_tokenRows.index_copy_(0, newIds.to(options().device),
                                at::cat({projected, residual}, 1).to(torch::kFloat));
        for (const std::int64_t t : missing)
            m_known[std::size_t(t)] = true;
    }
    return m_tokenRows.index_select(0, flat.to(options().device));
}

} // namespace tessera::gpu
