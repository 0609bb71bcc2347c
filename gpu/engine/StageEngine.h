// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageEngine: one pipeline stage behind a torch-free facade — token frames and codec frames
// in, codec frames out — for the node's engine in core/, which cannot include torch.
//
// Wraps StageModel (forward / kept or recompute backward), the run's Codec, StageOptimizer
// (AdamW) and StageShard. Every exception (c10::Error included) is caught here and returned as
// an Error: nothing throws out of this class. A bad frame, a shape that does not match, a
// microbatch the engine knows nothing of: each is an Error that changes no state.
//
// Lifecycle of a microbatch on one stage:
//   forward(id, input[, targets])  → KEPT (keepActivations) or FORGOTTEN
//   backward(id, gradOutput)        KEPT → ACCUMULATED (the graph is consumed)
//   backward(id, gradOutput, input[, targets])  FORGOTTEN → ACCUMULATED (recomputes)
//   drop(id)                        KEPT → FORGOTTEN (abandoned)
//   step(n)                         ACCUMULATED → applied; every KEPT graph is dropped
//
// The asynchronous pipeline (tasks that name their step): a forward of step k+1 may run before
// step k's averaged update lands and its backward after it. The forward is recorded with the weight
// version it ran on, an update stashes the weights such a microbatch still needs, and its backward
// runs on them (engine/WeightVersions); its gradients are kept with its step's, and shareGradients
// of step k shares those alone. Pipelined graphs survive an update.
//
// Not thread-safe: one thread (the engine worker) drives a StageEngine.
//
// StageEngine::State (defined in StageEngine.cpp) is the engine's own data — model, codec,
// optimizer, kept graphs, weight versions — behind a pointer only because this header stays
// torch-free: not a second concept, so it lives beside the functions that keep its invariants.

#include "base/Dtype.h"
#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/ShardManifest.h"
#include "base/TokenFrame.h"
#include "base/WeightFingerprint.h"
#include "train/OptimizerOptions.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessera::gpu {

struct StageEngineOptions {
    ModelConfig config; // the run's model, stages and codec included
    int stage = 0;
    std::string device = "cpu"; // "cpu", "cuda" or "cuda:N"
    // fp32 or bf16; nullopt: bf16 on CUDA devices of compute capability 8+, else fp32.
    std::optional<Dtype> computeDtype;
    OptimizerOptions optimizer;
    // Wire element types of the codec (nullopt: the codec's default; see codec/Codec.h).
    std::optional<Dtype> activationDtype;
    std::optional<Dtype> gradientDtype;
    std::int64_t maxTokens = 65536; // most B·T one frame may carry: bounds what decoding allocates
    // Keep each forward's graph so backward of the same microbatch needs no recompute (costs the
    // activations' memory until backward, drop or step).
    bool keepActivations = true;
    // A backward without a kept graph recomputes one block at a time (StageModel::setRecomputePerBlock):
    // one block's activations alive instead of the stage's, for one more forward (model/MemoryPlan).
    bool recomputePerBlock = false;
    // Kept graphs at most (a coordinator that never sends the backwards cannot fill the memory):
    // beyond it the oldest is dropped, and its backward recomputes (ErrorKind::MissingGraph).
    std::int64_t maxKept = 64;
    // Bytes left free (zero) in front of every output frame, for the caller's envelope: the node
    // writes its message header there and sends the frame from where the codec wrote it.
    std::size_t outputHeadroom = 0;
};

// What a replica sends for a step's gradient exchange (train/GradientExchange).
struct GradientShare {
    std::vector<float> values; // empty when it cannot take part (hasBasis false, or no microbatch)
    int microbatches = 0;      // accumulated since the last exchange
    bool hasBasis = true;      // false: it holds another round's warm start and sits this round out
    std::int64_t basisRound = 0;
    // PowerSGD's first round (low rank): the values are P_r; the second share follows the basis
    // (shareOnBasis). false: the values are the whole share (everything travels dense).
    bool firstRound = false;
};

struct StageForwardResult {
    // outputHeadroom zero bytes, then the codec activation frame for the next stage; empty on the
    // last stage.
    Bytes output;
    double loss = std::numeric_limits<double>::quiet_NaN(); // mean cross-entropy, last stage only
    std::int64_t tokens = 0;                                // B·T
};

struct StageBackwardResult {
    Bytes gradInput; // outputHeadroom zero bytes, then the codec gradient frame; empty on stage 0
    double loss = std::numeric_limits<double>::quiet_NaN(); // last stage only
    std::int64_t tokens = 0;
};

class StageEngine {
public:
    // Builds the stage with its seeded initial weights (those of a fresh StageModel) on the
    // device. An unknown or absent device is an Error that says which devices exist.
    static Result<std::unique_ptr<StageEngine>> create(const StageEngineOptions& options);
    ~StageEngine();
    StageEngine(const StageEngine&) = delete;
    StageEngine& operator=(const StageEngine&) = delete;

    // Verifies the file against the manifest (size, chunks, SHA-256, model and stage) and its
    // tensor set, then loads it. On failure no weight changes. On success kept graphs and
    // accumulated gradients (made with the old weights) are discarded; AdamW's moments stay.
    Status loadShard(const std::filesystem::path& file, const ShardManifest& manifest);
    // Writes the weights atomically and returns the manifest of what was written.
    Result<ShardManifest> saveShard(const std::filesystem::path& file, std::int64_t version,
                                    std::int64_t step);

    // Stage 0 takes a token frame, the others a codec activation frame. The last stage also needs
    // `targets`, a token frame of the same shape (ignored on other stages). step ≥ 0: a pipelined
    // microbatch of that step (at most three steps' gradients are held: the oldest goes first; a
    // step at or before the last one shared drops everything held — the coordinator restarted).
    Result<StageForwardResult> forward(std::int64_t microbatch, std::span<const std::uint8_t> input,
                                       std::span<const std::uint8_t> targets = {}, std::int64_t step = -1);
    // Backward of a microbatch: through its kept graph when there is one, else recomputed from
    // `input` (the relayed forward input; on the last stage with its targets). gradOutput is the
    // next stage's codec gradient frame, ignored on the last stage. Gradients accumulate until
    // step().
    Result<StageBackwardResult> backward(std::int64_t microbatch, std::span<const std::uint8_t> gradOutput,
                                         std::span<const std::uint8_t> input = {},
                                         std::span<const std::uint8_t> targets = {});
    // Forgets a kept graph (the microbatch was abandoned or went elsewhere); no-op when none.
    void drop(std::int64_t microbatch);
    // Runs body (forwards and backwards of synthetic microbatches: a probe of this stage's
    // speed), then puts every gradient and the accumulated count back as they were, so nothing
    // of it reaches the optimizer. Kept graphs of other microbatches are untouched.
    Status isolated(const std::function<Status()>& body);

    // The count sketch (base/CountSketch: this seed, its default buckets) of the weights' gradient one
    // microbatch gives on the weights held now — its backward recomputed from `input` (a last stage's
    // with its targets), nothing added to what is accumulated and nothing kept dropped: what a replica
    // answers when the coordinator checks another's gradient share against its work (trust/ShareCheck).
    Result<std::vector<float>> gradientSketch(std::span<const std::uint8_t> gradOutput,
                                              std::span<const std::uint8_t> input,
                                              std::span<const std::uint8_t> targets, std::uint64_t seed);

    // A bisection's (the coordinator's trust/Bisection), on the weights held now, nothing kept: the
    // residual stream [B, T, d] after each of the stage's blocks, one after the other, fp32.
    Result<std::vector<float>> traceForward(std::span<const std::uint8_t> input);
    // Segment b of that forward recomputed (StageModel::segment): from the input through the first
    // block for b = 0, else block b on `hidden` (the residual after block b − 1).
    Result<std::vector<float>> forwardSegment(int b, std::span<const std::uint8_t> input,
                                              std::span<const float> hidden);
    // The activation frame the stage sends for the last block's residual `hidden` (not the last stage).
    Result<Bytes> encodeOutput(std::span<const std::uint8_t> input, std::span<const float> hidden);
    // A backward's trace, nothing accumulated: the residual after each block (L), the loss's gradient with
    // respect to each (the last block's first: L) and to the stage's input (1; not on the first stage, whose
    // input is tokens), each B·T·d fp32, then the loss on the last stage (1 value). StageModel::traceBackward.
    Result<std::vector<float>> traceBackward(std::span<const std::uint8_t> gradOutput,
                                             std::span<const std::uint8_t> input,
                                             std::span<const std::uint8_t> targets);
    // Block b's backward recomputed: the gradient for its input from `gradAfter` (its output's), through
    // its forward from `before` (the residual after block b − 1; the stage's input for b = 0).
    Result<std::vector<float>> backwardSegment(int b, std::span<const std::uint8_t> input,
                                               std::span<const float> before,
                                               std::span<const float> gradAfter);
    // The last stage's head from the last residual: its gradient (B·T·d), then the loss (1 value).
    Result<std::vector<float>> headSegment(std::span<const std::uint8_t> input,
                                           std::span<const std::uint8_t> targets,
                                           std::span<const float> residual);
    // Segment b's weights' gradient from a backward trace's rows (segmentParameters(b)'s count, in parameter
    // order), nothing accumulated: block b's of ⟨its output, `gradAfter`⟩ through its forward from `before`
    // (the residual after block b − 1; the stage's input for b = 0), or for b = blocks() on the last stage
    // the final norm's and head's of the loss of `targets` from the last residual `before`.
    Result<std::vector<float>> segmentWeightGradient(int b, std::span<const std::uint8_t> input,
                                                     std::span<const float> before,
                                                     std::span<const float> gradAfter,
                                                     std::span<const std::uint8_t> targets);
    // The next stage's gradient frame as this stage reads it (fp32, B·T·d).
    Result<std::vector<float>> decodeGradientInput(std::span<const std::uint8_t> gradOutput,
                                                   std::span<const std::uint8_t> input);
    // The gradient frame this stage sends for `grad` (the gradient with respect to its input).
    Result<Bytes> encodeGradientOutput(std::span<const std::uint8_t> input, std::span<const float> grad);
    // Where segment b's parameters lie in parameter order: [offset, offset + count) — block b's, with
    // the embedding for b = 0 on stage 0 (it comes first); b = blocks(): the last stage's final norm and
    // head (none elsewhere).
    std::pair<std::int64_t, std::int64_t> segmentParameters(int b) const;
    int blocks() const;

    // AdamW over what was accumulated since the last step, averaged over `microbatches`. With 0,
    // or when nothing was accumulated, the weights do not move (and what was accumulated is
    // discarded). Either way the step ends every kept graph (they hold the old weights).
    Status step(int microbatches);

    // Gradient averaging (gpu/train/GradientExchange), in place of step(): shareGradients moves what
    // was accumulated into the error memory and returns this replica's share — at a low rank the
    // first round's, built on the warm start of round `basis` (basis 0: the seeded one — the combiner
    // started afresh; a rank unlike the last one starts the memory afresh); shareOnBasis then
    // returns the second share, on the basis the combiner answered. applyGradients writes the round's mean
    // gradient (every replica of the stage gets the same result) and steps AdamW on it at the schedule's
    // learning rate and the run's clip scale; kept graphs end (they hold the old weights).
    // step ≥ 0: the pipelined microbatches of that step (and what synchronous ones accumulated).
    // bits: what the share travels in (32; 8 or 4 at rank 0: its values are rounded as the receiver
    // decodes them, what rounding lost stays in the memory).
    Result<GradientShare> shareGradients(int rank, std::int64_t basis, std::int64_t step = -1, int bits = 32);
    // Refuses a basis of the wrong size or with values that are not finite, and a call with no first
    // share of this rank before it.
    Result<std::vector<float>> shareOnBasis(int rank, std::span<const float> basis);
    // (rank: the round's; a replica that never shared — the coordinator's checkpoint — starts there.)
    // lookAhead > 0 (the asynchronous pipeline's staleness correction): the weights then run ahead
    // of the optimizer's by lookAhead times this update, until the next one.
    Status applyGradients(int rank, std::span<const float> result, bool included, std::int64_t round,
                          double learningRate, double clipScale, double lookAhead = 0);
    // The shapes of the stage's parameters, in the order the exchange lays them out.
    std::vector<std::vector<std::int64_t>> parameterShapes() const;

    // SPARTA sparse averaging (gpu/train/Sparta): the stage's parameters cut into `partitions`
    // partitions by the run's seed (config().seed), identically on every replica and on the
    // coordinator's copy. partition -1 means all of them, concatenated 0..partitions-1.
    // Values travel as fp32 whatever the compute dtype. Kept graphs stay usable (the weights
    // change in place through an alias autograd does not track, so a graph kept before the change
    // still runs backward).
    // optimizers: the optimizer's weights, without the look-ahead (what SPARTA averages); else the
    // weights microbatches run on (what an audit recomputes with).
    Result<std::vector<float>> gatherPartition(int partition, int partitions, bool optimizers = false) const;
    Result<std::int64_t> partitionSize(int partition, int partitions) const;
    // The delta rule: w += average − snapshot (snapshot: what this replica sent for the round).
    Status applyPartitionDelta(int partition, int partitions, std::span<const float> average,
                               std::span<const float> snapshot);
    // w = values (the coordinator's checkpoint taking an average).
    Status setPartition(int partition, int partitions, std::span<const float> values);
    // A ghost sync's chunk: values [offset, offset + size) of the stage's weights in parameter order
    // (each parameter flattened, one after the other, as the shard lays them out) replace the
    // weights there; `total` is the stage's parameter count as the sender knows it (refused when it
    // is not this stage's). The values are the optimizer's: where the weights run ahead of it (the
    // look-ahead), the range stops running ahead until the next update.
    // total = parameterCount(): weights alone; 3 × parameterCount() (with 32-bit moments): AdamW's
    // first and second moments, then the weights, in the same order (StateRegion: updates applied
    // between chunks then land as on the coordinator's checkpoint, so that a ghost holds the state
    // its replicas hold).
    Status setWeightsRange(std::int64_t offset, std::int64_t total, std::span<const float> values);
    // The weights microbatches run on, [offset, offset + count) in parameter order (setWeightsRange's).
    Result<std::vector<float>> weightsRange(std::int64_t offset, std::int64_t count) const;
    // AdamW's step count, as the sync's checkpoint has it (its bias correction).
    void setOptimizerSteps(std::int64_t steps);
    // The fingerprint of the optimizer's weights (the coordinator's checkpoint's, without the
    // look-ahead) under `seed`: what a node answers after a step (base/WeightFingerprint).
    Result<WeightFingerprint> fingerprint(std::uint64_t seed) const;

    std::int64_t steps() const;
    std::int64_t parameterCount() const;
    int stage() const;
    const ModelConfig& config() const;
    std::int64_t keptCount() const;
    std::int64_t accumulatedMicrobatches() const;
    // "cpu" or "cuda:N", and "fp32" or "bf16".
    std::string device() const;
    Dtype computeDtype() const;

    // FLOPs the coordinator credits (DESIGN.md): forward 2·N·T, backward 4·N·T, with N the
    // stage's parameters and T the tokens; 0 for negative inputs, saturating at INT64_MAX.
    static std::int64_t forwardFlop(std::int64_t parameters, std::int64_t tokens);
    static std::int64_t backwardFlop(std::int64_t parameters, std::int64_t tokens);

    // Seeded, valid frames for benchmarks and self-tests: this stage's forward input, the last
    // stage's targets, and a gradient as the next stage would send it.
    Result<Bytes> syntheticInput(int batch, int seq, std::uint64_t seed) const;
    Result<Bytes> syntheticTargets(int batch, int seq, std::uint64_t seed) const;
    Result<Bytes> syntheticGradient(int batch, int seq, std::uint64_t seed) const;

    // e.g. "stage 1/4 of tiny on cpu (fp32), 410k parameters, codec none, activations fp32,
    // gradients fp32"
    std::string describe() const;

    struct State;

private:
    explicit StageEngine(std::unique_ptr<State> state);
    std::unique_ptr<State> m_state;
};

} // namespace tessera::gpu
