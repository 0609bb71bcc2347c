// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a SwarmSimulator holds (internal to train/): the replicas of every stage, the combiners, and
// the step's gradient exchange (SwarmExchange.cpp), in its variants.

#include "codec/Codec.h"
#include "model/StageModel.h"
#include "train/DataSource.h"
#include "train/GradientExchange.h"
#include "train/Sparta.h"
#include "train/SwarmSimulator.h"

#include <torch/types.h>

#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace tessera::gpu {

struct Replica {
    std::unique_ptr<StageModel> model;
    std::unique_ptr<StageOptimizer> optimizer;
    std::unique_ptr<Sparta> sparta;
    std::unique_ptr<GradientCompressor> compressor;
    std::unique_ptr<GradientCompressor> denseCompressor; // a low-rank run's dense rounds
    int microbatches = 0;                                // processed since the last optimizer step
    // exchangeUpdates: AdamW over zeros beside the weights, whose step is this replica's update.
    std::vector<torch::Tensor> stepScratch;
    std::unique_ptr<StageOptimizer> stepOptimizer;
    // Asynchronous pipeline: the averaged gradients of the last pipelineDelay steps, oldest first,
    // waiting to land, and the optimizer's weights while the model's run ahead of them (empty while
    // none).
    std::deque<std::vector<torch::Tensor>> pending;
    std::vector<torch::Tensor> optimizerWeights;
};

// The update a stage's replicas apply one step late: its round's learning rate and clip.
struct PendingUpdate {
    bool valid = false;
    double learningRate = 0;
    double clipScale = 1;
};

struct SwarmSimulator::State {
    SimOptions options;
    std::unique_ptr<DataSource> data;
    std::unique_ptr<Codec> codec;
    std::vector<std::vector<Replica>> stages;                           // [stage][replica]
    std::vector<std::unique_ptr<GradientRoundCombiner>> combiners;      // per stage
    std::vector<std::unique_ptr<GradientRoundCombiner>> denseCombiners; // a low-rank run's dense rounds
    std::vector<torch::Tensor> heldOut;
    std::vector<std::deque<PendingUpdate>> pending; // per stage, oldest first, with a delay
    std::mt19937_64 routing;
    std::int64_t step = 0;
    std::int64_t tokens = 0;
    std::int64_t nextMicrobatch = 0;
};

std::vector<torch::Tensor> parameterTensors(StageModel& model);

// Each stage's replicas share their gradients, the combiner makes the round's result, the global
// norm sets the clip, and every replica applies the same update — as the coordinator does.
void exchangeGradients(SwarmSimulator::State& st);

} // namespace tessera::gpu
