// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageOptimizer: AdamW over one stage's parameters, stepping on gradients accumulated over
// however many microbatches this replica processed since its last step. Internal to gpu/.
//
// With options.momentBits 8 the moments are kept in 8 bits between steps (2 bytes a parameter
// instead of 8; the layout that lets an 8b middle stage fit a 24 GB GPU — model/MemoryPlan): in
// blocks of 256 values, both on a log scale below the block's largest value: the first moment a sign
// and a 7-bit code (|m|_max·2^((code−127)/5): ±7% over 25 octaves), the second through its square
// root, what the update divides by (√v_max·2^((code−255)/10): ±3.5% of √v over 25 octaves of √v, 50
// of v); 0 codes 0. Linear codes (tried first) round every value under 1/254 of its block's largest
// to zero: the first moment's small values then stall their weights (measured: half of fp32 AdamW's
// move lost, median), the second's would blow their updates up; v itself on a log scale (tried
// next) spans too few octaves: gradients six decades below their block's largest moved 0.64× as far. A step
// decodes a chunk of one parameter's moments (options.stepChunkValues), steps in fp32 exactly as with 32
// bits, and encodes them again; rounding is to nearest, so replicas that apply the same gradients hold
// the same codes.

#include "train/OptimizerOptions.h"

#include <torch/types.h>

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace tessera::gpu {

// One parameter's AdamW step as StageOptimizer takes it (decoupled decay, bias-corrected moments):
// the optimizer's whole tensors, or the coordinator's checkpoint a chunk at a time (elementwise:
// the same values either way).
struct AdamwStep {
    double learningRate, beta1, beta2, weightDecay, epsilon;
    double correction1, correction2; // 1 − β^t of the first and second moment
    bool varianceMoves;              // false: the second moment stays as it is
};
void adamwUpdate(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& first,
                 const torch::Tensor& second, const AdamwStep& step);

// A state sync (a ghost taking the coordinator's checkpoint: 3 × the parameters) lays AdamW's
// state out moments first — the first moment, the second, then the weights, each in parameter order
// — because steps land between its chunks (every node of the stage takes every update from the
// sync's first chunk on). A step moves a moment by the gradient alone, but a weight by its moments:
// a weight that arrived before its moments took an update on moments the ghost never had (zeros:
// m/√v thousands of times the step) and kept it, so the ghost answered with a loss above 50 (issue
// 41). Moments first, every value is the checkpoint's from its chunk on; what has not arrived yet
// is overwritten.
enum class StateRegion { FirstMoment = 0, SecondMoment = 1, Weights = 2 };
inline constexpr int kStateRegions = 3;

class StageOptimizer {
public:
    StageOptimizer(std::vector<torch::Tensor> parameters, const OptimizerOptions& options = {});

    // Averages the accumulated gradients over `microbatches`, clips them to options.clipNorm,
    // steps, and zeroes them. A replica that processed no microbatch this step does not move (its
    // moments stay). False when a gradient value is not finite: nothing moves, the gradients are
    // zeroed (one poisoned step never reaches AdamW's moments, which would keep it for good).
    // learningRate: the schedule's value for this step (default: warm-up of the options only).
    bool step(int microbatches, std::optional<double> learningRate = std::nullopt);
    // A step on a gradient every replica of the stage agreed on (gradient averaging): p.grad()
    // already holds the mean gradient; it is scaled by clipScale (the run's global clip) and applied
    // at learningRate (the run's schedule). False, with nothing moved, when a value is not finite.
    // varianceMoves false: the second moment stays as it is this step (a compressed round's
    // gradient: only dense rounds move it, so AdamW stays linear in what error feedback releases).
    bool stepAgreed(double learningRate, double clipScale, bool varianceMoves = true);
    // A ghost sync (the coordinator's checkpoint, AdamW's state with the weights): values [offset,
    // offset + n) of the first or second moments, every parameter flattened in order. 32-bit moments
    // only (false with 8-bit ones: the sync then carries the weights alone).
    bool setMomentsRange(bool first, std::int64_t offset, std::span<const float> values);
    bool momentsSync() const { return m_options.momentBits == 32; }
    // The steps taken, as the checkpoint counts them (its every step moves both moments).
    void setSteps(std::int64_t steps) {
        m_steps = steps;
        m_varianceSteps = steps;
    }
    double lastGradientNorm() const { return m_lastNorm; }
    std::int64_t steps() const { return m_steps; }
    double currentLearningRate() const;

private:
    void zeroGradients();
    // Multiplies every gradient by factor; returns their L2 norm after.
    double scaleGradients(double factor);
    // Scales by clipScale and steps AdamW at learningRate; false (nothing moved) when not finite.
    bool applyAdam(double learningRate, double clipScale, bool varianceMoves = true);
    void stepCoded(std::size_t parameter, const AdamwStep& step);
    static double squaredNorm(const torch::Tensor& gradient, std::int64_t chunk);

    std::vector<torch::Tensor> m_parameters;
    OptimizerOptions m_options;
    std::vector<torch::Tensor> m_first, m_second; // 32-bit moments, per parameter (lazily made)
    // 8-bit moments: codes (int8 / uint8, padded to whole blocks) and fp32 block scales, per parameter.
    struct Coded {
        torch::Tensor codes, scales;
    };
    std::vector<Coded> m_firstCoded, m_secondCoded;
    std::int64_t m_steps = 0;
    std::int64_t m_varianceSteps = 0; // steps that moved the second moment
    double m_lastNorm = 0;
};

} // namespace tessera::gpu
