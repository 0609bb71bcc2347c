// SPDX-License-Identifier: Apache-2.0
#pragma once
// WeightVersions: the asynchronous pipeline's bookkeeping on one stage (PipeDream's weight stashing).
// With steps overlapping, a stage runs the forward of a microbatch of step k+1 before the averaged
// update of step k lands, and that microbatch's backward after it. So that both halves use the same
// weights, every pipelined forward is recorded with the weight version it ran on (the number of
// updates applied so far); an update stashes a copy of the weights it replaces while a recorded
// microbatch still needs them, and that microbatch's backward runs on the stash
// (StageModel::withWeights). Gradients are kept per step — a step's share holds its own
// microbatches' gradients, never the next step's.
//
// Bounded whatever the coordinator sends: at most kMaxSteps steps' gradients (the oldest dropped
// first) and kMaxStashes stashed versions at once (a microbatch older than that is forgotten: its
// backward is refused), at most kMaxRecords recorded microbatches (the oldest forgotten first).
//
// Internal to gpu/engine (includes torch). Not thread-safe: the engine's thread drives it.

#include "base/Result.h"

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

namespace tessera::gpu {

class StageModel;

class WeightVersions {
public:
    static constexpr std::int64_t kMaxSteps = 3;
    static constexpr std::size_t kMaxStashes = 2;
    static constexpr std::size_t kMaxRecords = 4096;

    explicit WeightVersions(StageModel& model)
        : m_model(model) {}

    std::int64_t version() const { return m_version; }
    // Before a forward of `step`: a step at or before the last one shared means the coordinator
    // counts steps afresh (it restarted) and everything held goes; beyond kMaxSteps steps held, the
    // oldest goes. Never refuses: a coordinator that forgot a step must not stall its node.
    void admit(std::int64_t step);
    // A pipelined forward of microbatch `id` (of `step`) ran on the current version.
    void recordForward(std::int64_t id, std::int64_t step);
    bool recorded(std::int64_t id) const { return m_records.contains(id); }
    // Runs body (the backward of `id`) on the weights its forward ran on, then adds the gradients it
    // left in the parameters' .grad to its step's and forgets the record. An Error, with nothing run,
    // when the version is no longer held.
    Status backward(std::int64_t id, const std::function<void()>& body);
    // Forgets a recorded microbatch (dropped, abandoned).
    void forget(std::int64_t id);
    // Adds step's gradients to the parameters' .grad and returns how many
    // microbatches they sum; 0 when none. Every microbatch of that step or an older one still
    // recorded is forgotten (the step is over: they were abandoned).
    std::int64_t takeStep(std::int64_t step);
    // Around an optimizer step: before, the current weights are stashed while a record needs them;
    // after, the version moves on and stashes no record needs are freed.
    void beforeUpdate();
    void afterUpdate();
    // The weights were replaced (a load) or every kept graph dropped: every record, stash and held
    // gradient is gone, and any step may come next.
    void reset();

    std::int64_t microbatchesHeld() const;
    std::size_t stashes() const { return m_stashes.size(); }
    std::size_t records() const { return m_records.size(); }

private:
    struct Record {
        std::int64_t version = 0;
        std::int64_t step = 0;
    };
    struct StepGradients {
        std::vector<torch::Tensor> grads; // in namedParameters' order; undefined where none
        std::int64_t microbatches = 0;
    };
    void prune();

    StageModel& m_model;
    std::int64_t m_version = 0;
    std::int64_t m_lastShared = -1;
    std::unordered_map<std::int64_t, Record> m_records;
    std::map<std::int64_t, std::vector<torch::Tensor>> m_stashes; // version → fp32 weights
    std::map<std::int64_t, StepGradients> m_steps;
};

} // namespace tessera::gpu
