// SPDX-License-Identifier: Apache-2.0
#pragma once
// SwarmSimulator: S pipeline stages × R replicas of one model in one process, trained the way
// the swarm trains it — every microbatch through a random replica per stage, activations and
// gradients through the codec's bytes; at every step the replicas of a stage average their
// gradients (GradientExchange: low rank with error feedback, weighted by microbatches), the step's
// global gradient norm is clipped and every replica applies the same AdamW update at the
// schedule's learning rate; SPARTA sparse averaging every 20 steps corrects what drift is left.
// Without gradient averaging every replica steps on its own gradients (the first wave's swarm).
// The asynchronous pipeline (pipelineDelay 1) is simulated by its effect on learning: a step's
// averaged update lands one step late (the next step's microbatches ran on the weights before it,
// forward and backward alike, as PipeDream-2BW's double buffer makes them), optionally with
// look-ahead: the weights a microbatch sees are the master weights plus lookAhead times the last
// update (a one-step prediction of the update still in flight).
// exchangeUpdates (measured, not the swarm's): each replica's AdamW step is exchanged instead of its
// gradient. S=1, R=1, codec none, rank 0 is the centralized baseline.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "train/LearningRateSchedule.h"
#include "train/StageOptimizer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tessera::gpu {

struct SimOptions {
    ModelConfig config; // stages and codec included
    int replicas = 1;
    int microbatchesPerStep = 8;
    int batch = 8; // sequences per microbatch
    int seqLen = 64;
    std::string data = "synthetic";
    std::uint64_t seed = 1;        // data order and routing
    std::uint64_t routingSeed = 0; // the replica each microbatch goes to (0: derived from seed)
    OptimizerOptions optimizer;    // AdamW; its learning rate and warm-up are the schedule's
    LearningRateSchedule schedule; // with gradient averaging
    bool gradientAveraging = true; // off: every replica steps on its own gradients
    int gradientRank = 0;          // the exchange's rank (0: dense fp32, exact)
    int gradientBits = 32;         // what shares and results travel in (32; 8 or 4 at rank 0)
    double memoryDecay = 1.0;      // error feedback's memory carried per round (1: all)
    // With a rank: the first denseSteps steps, and every denseEvery-th after (0: never), exchange
    // dense (in gradientBits) instead; AdamW's second moment moves on those rounds only.
    int denseSteps = 0;
    int denseEvery = 0;
    int denseBits = 8; // what the dense rounds of a low-rank run travel in
    // After this many steps AdamW's second moment stops moving (0: never; 1-bit Adam's frozen
    // variance, measured with the low-rank exchange).
    int freezeVarianceAfter = 0;
    // Replicas exchange their AdamW step instead of their gradient: each keeps AdamW's moments of
    // its own gradients, and the (compressed) mean of their steps is what every replica applies.
    bool exchangeUpdates = false;
    int pipelineDelay = 0; // 0: synchronous; 1: each update lands one step late
    double lookAhead = 0;  // with a delay: the weights run ahead by this times the last update
    bool sparseAveraging = true;
    int averagingInterval = 20; // steps between SPARTA rounds (the design's 20)
    int partitions = 20;        // 1/partitions of the weights per round (the design's 5%)
    int evalBatches = 8;        // held-out microbatches for evaluate()
};

struct SimStep {
    std::int64_t step = 0;
    std::int64_t tokens = 0;    // trained so far
    double trainLoss = 0;       // mean over this step's microbatches
    std::int64_t wireBytes = 0; // activations + gradients sent between stages this step
    int averagedStages = 0;     // stages that ran a SPARTA round this step
};

class SwarmSimulator {
public:
    static Result<std::unique_ptr<SwarmSimulator>> create(const SimOptions& options);
    ~SwarmSimulator();

    SimStep step();
    // Mean loss on fixed held-out batches through replica 0 of every stage (and the codec).
    double evaluate();
    double entropyFloor() const;
    // fp32 values one replica sends per step (all its stages' shares) and the whole gradient's.
    std::int64_t shareValues(int stage) const;
    std::int64_t gradientValues(int stage) const;
    // The largest difference between two replicas of a stage, relative to the weights' RMS: 0 while
    // gradient averaging keeps them equal.
    double replicaSpread() const;
    std::string describe() const;

    struct State;

private:
    explicit SwarmSimulator(std::unique_ptr<State> state);
    std::unique_ptr<State> m_state;
};

} // namespace tessera::gpu
