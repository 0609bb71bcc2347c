// SPDX-License-Identifier: Apache-2.0
#include "model/StageModel.h"

#include "model/ParameterSpec.h"
#include "model/SeededInit.h"
#include "model/Subspace.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <limits>
#include <stdexcept>

namespace tessera::gpu {

namespace {

std::string shape(const torch::Tensor& t) {
    std::string s = "[";
    for (std::int64_t i = 0; i < t.dim(); ++i)
        s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

} // namespace

StageModel::StageModel(const ModelConfig& config, int stage, torch::Device device,
                       torch::ScalarType computeDtype)
    : m_config(config)
    , m_stage(stage)
    , m_device(device)
    , m_dtype(computeDtype) {
    if (const Status valid = config.validate(); !valid)
        throw std::invalid_argument("model config: " + valid.message());
    if (stage < 0 || stage >= config.stages)
        throw std::invalid_argument("stage " + std::to_string(stage) + " is not in [0, " +
                                    std::to_string(config.stages) + ")");
    if (!torch::isFloatingType(computeDtype))
        throw std::invalid_argument("the compute dtype must be a floating-point type");
    std::tie(m_firstBlock, m_lastBlock) = config.stageBlocks(stage);
    initialise();
}

torch::ScalarType StageModel::computeDtypeFor(torch::Device device, int computeCapabilityMajor) {
    return device.is_cuda() && computeCapabilityMajor >= 8 ? torch::kBFloat16 : torch::kFloat;
}

void StageModel::initialise() {
    const bool subspace = m_config.codec == CodecKind::Subspace;
    const std::int64_t d = m_config.dModel;
    std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> owners;
    if (isFirst()) {
        m_embedding = torch::nn::Embedding(m_config.vocabSize, subspace ? m_config.subspaceDim() : d);
        owners.emplace_back("embedding.", m_embedding.ptr());
    }
    for (int b = m_firstBlock; b < m_lastBlock; ++b) {
        m_blocks.emplace_back(m_config);
        owners.emplace_back("blocks." + std::to_string(b) + ".", m_blocks.back().ptr());
    }
    if (isLast()) {
        m_norm = RmsNorm(d, m_config.normEps, !subspace);
        m_head = torch::nn::Linear(torch::nn::LinearOptions(d, m_config.vocabSize).bias(false));
        owners.emplace_back("norm.", m_norm.ptr());
        owners.emplace_back("head.", m_head.ptr());
    }

    torch::NoGradGuard noGrad;
    // Built in fp32 on the CPU and filled there from (seed, global name): the same values
    // whichever stage holds a block and on whatever device it then runs. The spec says how: a new
    // run's shards are streamed from it without a StageModel (shard/InitialShards), so the two agree.
    const std::vector<ParameterSpec> specs = stageParameters(m_config, m_stage);
    std::size_t next = 0;
    for (auto& [prefix, module] : owners)
        for (const auto& item : module->named_parameters()) {
            const std::string name = prefix + item.key();
            if (next >= specs.size() || specs[next].name != name || specs[next].shape != item.value().sizes())
                throw std::logic_error("parameter " + name + " is not the one ParameterSpec lists");
            const ParameterSpec& spec = specs[next++];
            if (spec.init == ParameterSpec::Init::Ones)
                item.value().fill_(1.0);
            else
                fillSeededNormal(item.value(), m_config.seed, name, spec.stddev);
        }
    if (next != specs.size())
        throw std::logic_error("ParameterSpec lists parameters the stage does not have");

    for (auto& [prefix, module] : owners) {
        std::vector<torch::Tensor> masters;
        if (m_dtype != torch::kFloat)
            for (const auto& p : module->parameters())
                masters.push_back(p.detach().to(m_device, torch::kFloat, false, true).requires_grad_());
        module->to(m_device, m_dtype);
        const auto named = module->named_parameters();
        for (std::size_t i = 0; i < named.size(); ++i) {
            const torch::Tensor& compute = named[i].value();
            const torch::Tensor master = masters.empty() ? compute : masters[i];
            m_parameters.push_back({prefix + named[i].key(), master, compute, master._version()});
        }
    }

    if (subspace) {
        m_basisT = makeSubspaceU(m_config).t().contiguous().to(m_device);
        m_fixedEmbedding = isFirst();
    }
    m_rope = std::make_unique<RotaryEmbedding>(m_config, m_device, m_dtype);
}

torch::Tensor StageModel::forward(const torch::Tensor& input, const torch::Tensor& targets) {
    syncComputeWeights();
    torch::NoGradGuard noGrad;
    const torch::Tensor x = checkedInput(input, false);
    return run(x, checkedTargets(targets, x));
}

BackwardResult StageModel::backward(const torch::Tensor& input, const torch::Tensor& gradOutputOrTargets) {
    if (m_perBlock)
        return backwardPerBlock(input, gradOutputOrTargets);
    syncComputeWeights();
    torch::AutoGradMode gradMode(true);
    Kept kept;
    const torch::Tensor x = checkedInput(input, true);
    if (!isFirst())
        kept.input = x;
    kept.output = run(x, isLast() ? checkedTargets(gradOutputOrTargets, x) : torch::Tensor());
    return finishBackward(kept, isLast() ? torch::Tensor() : gradOutputOrTargets);
}

torch::Tensor StageModel::forwardKeep(MicrobatchId id, const torch::Tensor& input,
                                      const torch::Tensor& targets) {
    syncComputeWeights();
    torch::AutoGradMode gradMode(true);
    Kept kept;
    const torch::Tensor x = checkedInput(input, true);
    if (!isFirst())
        kept.input = x;
    kept.output = run(x, checkedTargets(targets, x));
    torch::Tensor result = kept.output.detach();
    m_kept.insert_or_assign(id, std::move(kept));
    return result;
}

BackwardResult StageModel::backward(MicrobatchId id, const torch::Tensor& gradOutput) {
    const auto it = m_kept.find(id);
    if (it == m_kept.end())
        throw std::invalid_argument("no activations kept for microbatch " + std::to_string(id) +
                                    ": recompute from its input");
    const Kept kept = std::move(it->second);
    m_kept.erase(it);
    return finishBackward(kept, gradOutput);
}

BackwardResult StageModel::finishBackward(const Kept& kept, const torch::Tensor& gradOutput) {
    if (isLast()) {
        torch::autograd::backward({kept.output});
    } else {
        if (!gradOutput.defined() || gradOutput.sizes() != kept.output.sizes())
            throw std::invalid_argument("gradOutput must be " + shape(kept.output) +
                                        " like the stage's output");
        torch::autograd::backward({kept.output}, {gradOutput.to(m_device, torch::kFloat)});
    }
    collectGradients();
    BackwardResult result;
    if (kept.input.defined())
        result.gradInput = kept.input.grad();
    if (isLast())
        result.loss = kept.output.detach();
    return result;
}

torch::Tensor StageModel::run(const torch::Tensor& input, const torch::Tensor& targets) {
    torch::Tensor x = isFirst() ? embed(input) : input;
    const BlockContext context{m_rope.get(), causalMask(input.size(1)), m_basisT, m_dtype};
    for (auto& block : m_blocks)
        x = block(x, context);
    return isLast() ? lossOf(x, targets) : x;
}

std::vector<torch::Tensor> StageModel::trace(const torch::Tensor& input) {
    syncComputeWeights();
    torch::NoGradGuard noGrad;
    const torch::Tensor checked = checkedInput(input, false);
    torch::Tensor x = isFirst() ? embed(checked) : checked;
    const BlockContext context{m_rope.get(), causalMask(checked.size(1)), m_basisT, m_dtype};
    std::vector<torch::Tensor> out;
    for (auto& block : m_blocks)
        out.push_back(x = block(x, context));
    return out;
}

torch::Tensor StageModel::segment(int b, const torch::Tensor& input, const torch::Tensor& hidden) {
    if (b < 0 || b >= blocks())
        throw std::invalid_argument("segment " + std::to_string(b) + " of a stage of " +
                                    std::to_string(blocks()) + " blocks");
    syncComputeWeights();
    torch::NoGradGuard noGrad;
    const torch::Tensor checked = checkedInput(input, false);
    torch::Tensor x = b > 0 ? hidden.to(m_device, torch::kFloat) : isFirst() ? embed(checked) : checked;
    if (x.dim() != 3 || x.size(0) != checked.size(0) || x.size(1) != checked.size(1) ||
        x.size(2) != m_config.dModel)
        throw std::invalid_argument("a segment's hidden state must be " + shape(checked) + " × dModel");
    const BlockContext context{m_rope.get(), causalMask(checked.size(1)), m_basisT, m_dtype};
    return m_blocks[std::size_t(b)](x, context);
}

StageModel::BackwardTrace StageModel::traceBackward(const torch::Tensor& input,
                                                    const torch::Tensor& gradOutputOrTargets) {
    syncComputeWeights();
    torch::AutoGradMode gradMode(true);
    const torch::Tensor checked = checkedInput(input, true);
    const BlockContext context{m_rope.get(), causalMask(checked.size(1)), m_basisT, m_dtype};
    BackwardTrace trace;
    torch::Tensor x = isFirst() ? embed(checked) : checked;
    for (auto& block : m_blocks) {
        x = block(x, context);
        trace.residuals.push_back(x);
    }
    std::vector<torch::Tensor> wrt(trace.residuals.rbegin(), trace.residuals.rend());
    if (!isFirst())
        wrt.push_back(checked);
    torch::Tensor out = x, seed;
    if (isLast()) {
        trace.loss = out = lossOf(x, checkedTargets(gradOutputOrTargets, checked));
    } else {
        if (!gradOutputOrTargets.defined() || gradOutputOrTargets.sizes() != x.sizes())
            throw std::invalid_argument("gradOutput must be " + shape(x) + " like the stage's output");
        seed = gradOutputOrTargets.to(m_device, torch::kFloat);
    }
    // torch::autograd::grad: the gradients asked for only — no parameter's .grad changes.
    trace.gradients =
        torch::autograd::grad({out}, wrt, {seed}, /*retain_graph=*/false, /*create_graph=*/false,
                              /*allow_unused=*/true);
    for (torch::Tensor& r : trace.residuals)
        r = r.detach();
    if (trace.loss.defined())
        trace.loss = trace.loss.detach();
    return trace;
}

torch::Tensor StageModel::blockBackward(int b, const torch::Tensor& before, const torch::Tensor& gradAfter) {
    if (b < 0 || b >= blocks() || (b == 0 && isFirst()))
        throw std::invalid_argument("block " + std::to_string(b) + "'s backward has no input gradient here");
    syncComputeWeights();
    torch::AutoGradMode gradMode(true);
    const torch::Tensor x = before.to(m_device, torch::kFloat).detach().requires_grad_(true);
    const BlockContext context{m_rope.get(), causalMask(x.size(1)), m_basisT, m_dtype};
    const torch::Tensor y = m_blocks[std::size_t(b)](x, context);
    if (gradAfter.sizes() != y.sizes())
        throw std::invalid_argument("a block's output gradient must be " + shape(y));
    return torch::autograd::grad({y}, {x}, {gradAfter.to(m_device, torch::kFloat)})[0];
}

std::pair<torch::Tensor, torch::Tensor> StageModel::headBackward(const torch::Tensor& residual,
                                                                 const torch::Tensor& targets) {
    if (!isLast())
        throw std::invalid_argument("only the last stage has a head");
    syncComputeWeights();
    torch::AutoGradMode gradMode(true);
    const torch::Tensor x = residual.to(m_device, torch::kFloat).detach().requires_grad_(true);
    const torch::Tensor loss = lossOf(x, checkedTargets(targets, x));
    return {loss.detach(), torch::autograd::grad({loss}, {x})[0]};
}

torch::Tensor StageModel::segmentWeightGradient(int b, const torch::Tensor& input,
                                                const torch::Tensor& before,
                                                const torch::Tensor& gradAfterOrTargets) {
    const bool head = b == blocks();
    if (b < 0 || b > blocks() || (head && !isLast()))
        throw std::invalid_argument("segment " + std::to_string(b) + " of a stage of " +
                                    std::to_string(blocks()) + " blocks has no weights' gradient here");
    syncComputeWeights();
    torch::AutoGradMode gradMode(true);
    // The segment's parameters in parameter order: as StageEngine::segmentParameters finds them.
    const std::string prefix = "blocks." + std::to_string(m_firstBlock + b) + ".";
    std::vector<torch::Tensor> params;
    for (const Parameter& p : m_parameters) {
        const bool inBlock = p.name.rfind("blocks.", 0) == 0,
                   inEmbedding = p.name.rfind("embedding.", 0) == 0;
        if (head ? !inBlock && !inEmbedding : p.name.rfind(prefix, 0) == 0 || (b == 0 && inEmbedding))
            params.push_back(p.compute);
    }
    if (params.empty())
        throw std::invalid_argument("segment " + std::to_string(b) + " has no parameters");
    std::vector<torch::Tensor> grads;
    if (head) {
        const torch::Tensor x = before.to(m_device, torch::kFloat).detach();
        const torch::Tensor loss = lossOf(x, checkedTargets(gradAfterOrTargets, x));
        grads = torch::autograd::grad({loss}, params, {}, false, false, true);
    } else {
        const torch::Tensor checked = checkedInput(input, false);
        const torch::Tensor x = b > 0       ? before.to(m_device, torch::kFloat).detach()
                                : isFirst() ? embed(checked)
                                            : checked;
        const BlockContext context{m_rope.get(), causalMask(checked.size(1)), m_basisT, m_dtype};
        const torch::Tensor y = m_blocks[std::size_t(b)](x, context);
        if (gradAfterOrTargets.sizes() != y.sizes())
            throw std::invalid_argument("a block's output gradient must be " + shape(y));
        grads = torch::autograd::grad({y}, params, {gradAfterOrTargets.to(m_device, torch::kFloat)}, false,
                                      false, true);
    }
    std::vector<torch::Tensor> flat;
    for (std::size_t i = 0; i < params.size(); ++i)
        flat.push_back(grads[i].defined() ? grads[i].detach().to(torch::kFloat).reshape({-1})
                                          : torch::zeros({params[i].numel()}, torch::kFloat));
    return torch::cat(flat).to(torch::kCPU);
}

torch::Tensor StageModel::embed(const torch::Tensor& ids) const {
    torch::Tensor x = torch::embedding(m_embedding->weight, ids).to(torch::kFloat);
    // x0 = E[tok] + Emb_k[tok]·Uᵀ: only the second part is learned, and it lies in span(U).
    if (m_fixedEmbedding) // E's rows made for these ids only (at 8b the whole E is 2 GiB)
        x = fixedEmbeddingRows(m_config, ids, m_device).view({ids.size(0), ids.size(1), m_config.dModel}) +
            torch::matmul(x, m_basisT);
    return x;
}

torch::Tensor StageModel::lossOf(const torch::Tensor& hidden, const torch::Tensor& targets) {
    const torch::Tensor logits = m_head(m_norm(hidden, m_dtype));
    return torch::cross_entropy_loss(logits.view({-1, logits.size(-1)}).to(torch::kFloat),
                                     targets.view({-1}));
}

BackwardResult StageModel::backwardPerBlock(const torch::Tensor& input,
                                            const torch::Tensor& gradOutputOrTargets) {
    syncComputeWeights();
    const torch::Tensor x = checkedInput(input, false);
    const torch::Tensor targets = isLast() ? checkedTargets(gradOutputOrTargets, x) : torch::Tensor();
    const BlockContext context{m_rope.get(), causalMask(input.size(1)), m_basisT, m_dtype};
    // Without a graph: every block's input, and the stage's last hidden state.
    std::vector<torch::Tensor> inputs;
    {
        torch::NoGradGuard noGrad;
        torch::Tensor h = isFirst() ? embed(x) : x;
        for (auto& block : m_blocks) {
            inputs.push_back(h);
            h = block(h, context);
        }
        inputs.push_back(h);
    }
    torch::AutoGradMode gradMode(true);
    BackwardResult result;
    torch::Tensor grad;
    if (isLast()) {
        const torch::Tensor h = inputs.back().detach().requires_grad_();
        const std::int64_t tokens = h.size(0) * h.size(1);
        if (tokens <= m_lossChunk) {
            const torch::Tensor loss = lossOf(h, targets);
            torch::autograd::backward({loss});
            result.loss = loss.detach();
        } else {
            // The mean over all tokens as the sum of each chunk's share of it.
            const torch::Tensor flat = h.view({tokens, h.size(2)});
            const torch::Tensor flatTargets = targets.reshape({tokens});
            torch::Tensor total = torch::zeros({}, flat.options().dtype(torch::kFloat));
            for (std::int64_t begin = 0; begin < tokens; begin += m_lossChunk) {
                const std::int64_t n = std::min(m_lossChunk, tokens - begin);
                const torch::Tensor logits = m_head(m_norm(flat.narrow(0, begin, n), m_dtype));
                const torch::Tensor part =
                    torch::nn::functional::cross_entropy(
                        logits.to(torch::kFloat), flatTargets.narrow(0, begin, n),
                        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)) /
                    double(tokens);
                torch::autograd::backward({part});
                total += part.detach();
            }
            result.loss = total;
        }
        collectGradients();
        grad = h.grad();
    } else {
        if (!gradOutputOrTargets.defined() || gradOutputOrTargets.sizes() != inputs.back().sizes())
            throw std::invalid_argument("gradOutput must be " + shape(inputs.back()) +
                                        " like the stage's output");
        grad = gradOutputOrTargets.to(m_device, torch::kFloat);
    }
    inputs.pop_back();
    for (std::size_t b = m_blocks.size(); b-- > 0;) {
        const torch::Tensor h = inputs[b].detach().requires_grad_();
        inputs[b] = torch::Tensor();
        const torch::Tensor out = m_blocks[b](h, context);
        torch::autograd::backward({out}, {grad});
        collectGradients();
        grad = h.grad();
    }
    if (isFirst()) {
        torch::autograd::backward({embed(x)}, {grad});
        collectGradients();
    } else {
        result.gradInput = grad;
    }
    return result;
}

torch::Tensor StageModel::checkedInput(const torch::Tensor& input, bool recordGradient) const {
    if (!input.defined())
        throw std::invalid_argument("stage input is undefined");
    const bool ids = isFirst();
    if (ids && (input.dim() != 2 || !torch::isIntegralType(input.scalar_type(), false)))
        throw std::invalid_argument("stage 0 takes token ids [B, T], not " + shape(input));
    if (!ids &&
        (input.dim() != 3 || input.size(2) != m_config.dModel || !torch::isFloatingType(input.scalar_type())))
        throw std::invalid_argument("stage " + std::to_string(m_stage) + " takes hidden states [B, T, " +
                                    std::to_string(m_config.dModel) + "], not " + shape(input));
    if (input.size(0) < 1 || input.size(1) < 1 || input.size(1) > m_config.maxSeqLen)
        throw std::invalid_argument("sequence length must be in [1, " + std::to_string(m_config.maxSeqLen) +
                                    "], batch at least 1: got " + shape(input));
    if (ids)
        return input.to(m_device, torch::kLong);
    torch::Tensor x = input.to(m_device, torch::kFloat);
    // A leaf of our own: its .grad is the gradient the previous stage needs.
    return recordGradient ? x.detach().requires_grad_() : x;
}

torch::Tensor StageModel::checkedTargets(const torch::Tensor& targets, const torch::Tensor& input) const {
    if (!isLast()) {
        if (targets.defined())
            throw std::invalid_argument("only the last stage takes targets");
        return {};
    }
    if (!targets.defined() || targets.dim() != 2 || targets.size(0) != input.size(0) ||
        targets.size(1) != input.size(1) || !torch::isIntegralType(targets.scalar_type(), false))
        throw std::invalid_argument("the last stage needs targets [B, T] of token ids matching its input " +
                                    shape(input));
    return targets.to(m_device, torch::kLong);
}

const torch::Tensor& StageModel::causalMask(std::int64_t length) {
    if (TESSERA_FUSED_ATTENTION) // causal by the kernel's flag: no mask in memory
        return m_mask;
    if (m_maskLength != length) {
        const std::int64_t group = m_config.nHeads / m_config.nKvHeads;
        m_mask = torch::full({length, length}, -std::numeric_limits<double>::infinity(),
                             torch::TensorOptions().dtype(m_dtype).device(m_device))
                     .triu(1)
                     .repeat({group, 1});
        m_maskLength = length;
    }
    return m_mask;
}

void StageModel::syncComputeWeights() {
    if (m_dtype == torch::kFloat)
        return;
    torch::NoGradGuard noGrad;
    for (Parameter& p : m_parameters)
        if (p.master._version() != p.syncedVersion) {
            p.compute.variable_data().copy_(p.master);
            p.syncedVersion = p.master._version();
        }
}

void StageModel::collectGradients() {
    if (m_dtype == torch::kFloat)
        return;
    // Accumulate in fp32 on the masters: many microbatches' bf16 sums would lose precision.
    torch::NoGradGuard noGrad;
    for (Parameter& p : m_parameters) {
        torch::Tensor& grad = p.compute.mutable_grad();
        if (!grad.defined())
            continue;
        if (p.master.grad().defined())
            p.master.mutable_grad().add_(grad);
        else
            p.master.mutable_grad() = grad.to(torch::kFloat);
        grad = torch::Tensor();
    }
}

void StageModel::withWeights(const std::vector<torch::Tensor>& weights, const std::function<void()>& body) {
    if (weights.size() != m_parameters.size())
        throw std::invalid_argument("withWeights: got " + std::to_string(weights.size()) + " tensors for " +
                                    std::to_string(m_parameters.size()) + " parameters");
    syncComputeWeights();
    std::vector<torch::Tensor> current;
    {
        torch::NoGradGuard noGrad;
        for (std::size_t i = 0; i < m_parameters.size(); ++i) {
            Parameter& p = m_parameters[i];
            if (p.compute.is_same(p.master))
                current.push_back(p.master.detach().clone());
            p.compute.variable_data().copy_(weights[i]);
        }
    }
    const auto restore = [&] {
        torch::NoGradGuard noGrad;
        std::size_t saved = 0;
        for (Parameter& p : m_parameters)
            p.compute.variable_data().copy_(p.compute.is_same(p.master) ? current[saved++] : p.master);
    };
    try {
        body();
    } catch (...) {
        restore();
        throw;
    }
    restore();
}

void StageModel::weightsChanged() {
    for (Parameter& p : m_parameters)
        p.syncedVersion = -1;
}

std::vector<std::pair<std::string, torch::Tensor>> StageModel::namedParameters() const {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    named.reserve(m_parameters.size());
    for (const Parameter& p : m_parameters)
        named.emplace_back(p.name, p.master);
    return named;
}

void StageModel::zeroGrad() {
    torch::NoGradGuard noGrad;
    for (Parameter& p : m_parameters) {
        if (p.master.grad().defined())
            p.master.mutable_grad().zero_();
        if (!p.compute.is_same(p.master))
            p.compute.mutable_grad() = torch::Tensor();
    }
}

std::int64_t StageModel::parameterCount() const {
    std::int64_t n = 0;
    for (const Parameter& p : m_parameters)
        n += p.master.numel();
    return n;
}

} // namespace tessera::gpu
