// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageModel: one pipeline stage of the decoder (blocks [first, last) of the config's split,
// plus the embedding on stage 0 and the final norm, LM head and loss on the last stage), with
// the forward, recompute-backward and kept-activation backward a pipeline worker runs.
// Internal to gpu/ (includes torch).
//
// Parameters are fp32 "master" tensors named as in the unsplit model ("blocks.5.attn.wq.weight"),
// so a stage's tensors are the whole model's tensors of the same names; their initial values
// depend only on (config.seed, name). With a bf16 compute dtype the blocks run on a bf16 copy
// of the masters that follows them automatically (re-cast when a master's version counter
// moves, e.g. after an optimizer step), and gradients are accumulated into the masters' fp32
// .grad. The residual stream, stage boundaries and the loss are fp32 in every mode. Change the
// masters with tensor ops (copy_, add_, an optimizer): raw writes to their memory move no
// version counter and would leave the bf16 copy stale.
//
// Not thread-safe: one thread drives a StageModel at a time.

#include "base/ModelConfig.h"
#include "model/DecoderBlock.h"
#include "model/MemoryEstimate.h"
#include "model/RmsNorm.h"
#include "model/RotaryEmbedding.h"

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::gpu {

using MicrobatchId = std::int64_t;

struct BackwardResult {
    torch::Tensor gradInput; // d loss / d input [B, T, d] fp32; undefined on stage 0 (token ids)
    torch::Tensor loss;      // scalar mean loss on the last stage (detached); undefined elsewhere
};

class StageModel {
public:
    // Throws std::invalid_argument for an invalid config or stage.
    StageModel(const ModelConfig& config, int stage, torch::Device device = torch::kCPU,
               torch::ScalarType computeDtype = torch::kFloat);
    StageModel(const StageModel&) = delete;
    StageModel& operator=(const StageModel&) = delete;

    // bf16 on CUDA devices with bf16 tensor cores (compute capability 8.0+), else fp32.
    static torch::ScalarType computeDtypeFor(torch::Device device, int computeCapabilityMajor);

    // No graph is recorded: the cheap forward of a pipeline that recomputes. Stage 0 takes token
    // ids [B, T] (integral), other stages hidden [B, T, d]. Returns hidden [B, T, d] fp32, or on
    // the last stage the scalar mean cross-entropy over all B·T targets ([B, T] int64, required).
    torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& targets = {});

    // A forward's trace, no graph: the residual stream [B, T, d] fp32 after each of the stage's blocks
    // (the last one is forward()'s output on a stage before the last) — what a bisection compares.
    std::vector<torch::Tensor> trace(const torch::Tensor& input);
    // One segment of a forward, no graph: segment 0 runs from `input` (token ids on stage 0, which are
    // embedded first) through the stage's first block; segment b ≥ 1 runs block b on `hidden`, the
    // residual stream after block b − 1. What a bisection recomputes of a disputed forward.
    torch::Tensor segment(int b, const torch::Tensor& input, const torch::Tensor& hidden);
    int blocks() const { return int(m_blocks.size()); }
    // A backward's trace, nothing added to the parameters' gradients: the residual after each block,
    // then the loss's gradient with respect to each of them (last block's first) and to the stage's input
    // (undefined on stage 0), and the loss on the last stage — what a bisection of a backward compares.
    struct BackwardTrace {
        std::vector<torch::Tensor> residuals; // after block 0 … L − 1
        std::vector<torch::Tensor> gradients; // d/d residual L − 1 … 0, then d/d input
        torch::Tensor loss;                   // the last stage's
    };
    BackwardTrace traceBackward(const torch::Tensor& input, const torch::Tensor& gradOutputOrTargets);
    // One block's backward alone: the gradient with respect to block b's input (`before`: the residual
    // after block b − 1, or the stage's input for b = 0 on a stage after the first) of ⟨block b's output,
    // `gradAfter`⟩. Nothing added to the parameters' gradients.
    torch::Tensor blockBackward(int b, const torch::Tensor& before, const torch::Tensor& gradAfter);
    // The last stage's head alone: the loss of `targets` from the last residual, and its gradient with
    // respect to that residual.
    std::pair<torch::Tensor, torch::Tensor> headBackward(const torch::Tensor& residual,
                                                         const torch::Tensor& targets);
    // Segment b's parameters' gradient alone (1-D fp32, in parameter order: StageEngine::segmentParameters),
    // nothing added to .grad: block b's (with the embedding's for b = 0 on stage 0) of ⟨its output,
    // `gradAfterOrTargets`⟩ through its forward from `before` (the residual after block b − 1; unused for
    // b = 0, which starts from `input`); for b = blocks() on the last stage the final norm's and head's of
    // the loss of targets `gradAfterOrTargets` from the last residual `before`. What a share check
    // computes from a lone replica's trace (trust/Bisection).
    torch::Tensor segmentWeightGradient(int b, const torch::Tensor& input, const torch::Tensor& before,
                                        const torch::Tensor& gradAfterOrTargets);

    // Recomputes the forward from `input` with a graph and backpropagates gradOutput [B, T, d]
    // (the next stage's gradInput) or, on the last stage, the loss of targets [B, T]. Adds to the
    // parameters' .grad (never zeroes them).
    BackwardResult backward(const torch::Tensor& input, const torch::Tensor& gradOutputOrTargets);
    // How that recompute runs: the whole stage with one graph (the default), or one block at a time
    // (activation checkpointing per block): a forward without a graph keeps each block's input, then
    // the blocks run again last first, each with a graph of its own freed after its backward. The
    // activations alive are one block's instead of the stage's, for one more forward. The results
    // are the same to the bit (tested): every parameter's gradient is made by the same operations.
    // The last stage then computes its head and loss kLossChunkTokens (MemoryEstimate.h) tokens at a time
    // (the logits over the vocabulary are its largest tensors): the loss and the gradients then differ
    // from the whole stage's by the order of their sums (~1e-7 relative), not at all with fewer tokens.
    void setRecomputePerBlock(bool perBlock) { m_perBlock = perBlock; }
    void setLossChunkTokens(std::int64_t tokens) { m_lossChunk = tokens; } // tests
    bool recomputesPerBlock() const { return m_perBlock; }

    // Like forward, but records the graph and keeps it under `id` until backward(id, …) or
    // dropKept(id); a second forwardKeep with the same id replaces it. A kept graph is stale once
    // the parameters change (its backward throws): drop what is kept before an optimizer step.
    torch::Tensor forwardKeep(MicrobatchId id, const torch::Tensor& input, const torch::Tensor& targets = {});
    // Backward through the kept graph of `id`, then drops it. gradOutput is ignored (may be
    // undefined) on the last stage. Throws std::invalid_argument when nothing is kept for `id`:
    // check hasKept(id) and fall back to the recompute overload with the relayed input.
    BackwardResult backward(MicrobatchId id, const torch::Tensor& gradOutput);
    bool hasKept(MicrobatchId id) const { return m_kept.contains(id); }
    void dropKept(MicrobatchId id) { m_kept.erase(id); }
    std::size_t keptCount() const { return m_kept.size(); }

    // Runs body with the weights the modules compute with (those kept graphs saved) set to `weights`
    // — fp32 values of an older version, in namedParameters' order — then puts the current masters
    // back, even when body throws. A graph kept under that older version then runs backward through
    // the weights it was recorded with (the asynchronous pipeline's weight stash). The writes go
    // through aliases autograd does not track, so kept graphs stay usable.
    void withWeights(const std::vector<torch::Tensor>& weights, const std::function<void()>& body);
    // The masters changed through such aliases (an optimizer stepping on them): the bf16 compute
    // copies are re-cast before the next forward. No-op in fp32.
    void weightsChanged();

    // The fp32 master parameters, in a fixed order: what optimizers, SPARTA and shards use.
    std::vector<std::pair<std::string, torch::Tensor>> namedParameters() const;
    void zeroGrad();
    std::int64_t parameterCount() const;

    const ModelConfig& config() const { return m_config; }
    int stage() const { return m_stage; }
    std::pair<int, int> blockRange() const { return {m_firstBlock, m_lastBlock}; }
    bool isFirst() const { return m_stage == 0; }
    bool isLast() const { return m_stage == m_config.stages - 1; }
    torch::Device device() const { return m_device; }
    torch::ScalarType computeDtype() const { return m_dtype; }

private:
    struct Parameter {
        std::string name;
        torch::Tensor master;  // fp32, on the device
        torch::Tensor compute; // what the modules use: the master itself in fp32 mode
        std::int64_t syncedVersion = 0;
    };
    struct Kept {
        torch::Tensor input; // the leaf whose .grad is gradInput (undefined on stage 0)
        torch::Tensor output;
    };

    void initialise();
    torch::Tensor checkedInput(const torch::Tensor& input, bool recordGradient) const;
    torch::Tensor checkedTargets(const torch::Tensor& targets, const torch::Tensor& input) const;
    torch::Tensor run(const torch::Tensor& input, const torch::Tensor& targets);
    torch::Tensor embed(const torch::Tensor& ids) const;                             // stage 0
    torch::Tensor lossOf(const torch::Tensor& hidden, const torch::Tensor& targets); // last stage
    BackwardResult backwardPerBlock(const torch::Tensor& input, const torch::Tensor& gradOutputOrTargets);
    BackwardResult finishBackward(const Kept& kept, const torch::Tensor& gradOutput);
    const torch::Tensor& causalMask(std::int64_t length);
    void syncComputeWeights();
    void collectGradients();

    ModelConfig m_config;
    int m_stage;
    int m_firstBlock = 0;
    int m_lastBlock = 0;
    torch::Device m_device;
    torch::ScalarType m_dtype;
    bool m_perBlock = false;
    std::int64_t m_lossChunk = kLossChunkTokens;

    std::vector<DecoderBlock> m_blocks;
    torch::nn::Embedding m_embedding{nullptr}; // stage 0: [vocab, d], or [vocab, k] in a subspace run
    RmsNorm m_norm{nullptr};                   // last stage
    torch::nn::Linear m_head{nullptr};         // last stage
    torch::Tensor m_basisT;                    // Uᵀ [k, d] fp32, subspace runs
    bool m_fixedEmbedding = false;             // stage 0 of a subspace run adds E[tok] (model/Subspace)
    std::unique_ptr<RotaryEmbedding> m_rope;
    std::int64_t m_maskLength = -1;
    torch::Tensor m_mask;

    std::vector<Parameter> m_parameters;
    std::unordered_map<MicrobatchId, Kept> m_kept;
};

} // namespace tessera::gpu
