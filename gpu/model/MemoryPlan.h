// SPDX-License-Identifier: Apache-2.0
#pragma once
// MemoryPlan: how a node lays one stage out in its device's memory, chosen before it downloads
// anything — and the same arithmetic the coordinator's admission uses, so a node is only assigned a
// stage it can hold. Torch-free.
//
// The layouts the engine builds, fastest first (the first that fits is the plan):
//   1. activations kept between forward and backward;
//   2. activations recomputed at backward (only the stage's input and output held per microbatch,
//      the whole stage's activations alive while one backward runs);
//   3. recomputed one block at a time (one block's activations alive, one more forward).
// AdamW's moments take 8 or 2 bytes a parameter as the run says (ModelConfig::momentBits: it must be
// the same on every replica, so it is not the node's choice). A layout the engine does not build yet
// (the fp32 masters and moments in host memory, moved over the bus at each step) is planned only
// when asked (the table of BENCHMARKS.md), never offered to a node.

#include "base/Dtype.h"
#include "base/ModelConfig.h"
#include "model/MemoryEstimate.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::gpu {

struct MemoryLayout {
    bool keepActivations = false;
    bool perBlock = false;        // recompute one block at a time (when not kept)
    bool optimizerOnHost = false; // fp32 masters and moments in host memory (not built)

    bool operator==(const MemoryLayout&) const = default;
};

// The layouts a node may be given, in the order they are tried.
std::vector<MemoryLayout> builtLayouts();
// Those and the ones not built, for the planning table.
std::vector<MemoryLayout> allLayouts();
// "activations recomputed": the layout in words.
std::string describe(const MemoryLayout& layout);

struct MemoryPlanRequest {
    std::int64_t deviceBytes = 0; // the GPU's memory; on a CPU node, the computer's
    bool gpu = false;             // for the wording: "this GPU" or "this computer"
    Dtype compute = Dtype::F32;
    int batch = 1;
    int seqLen = 0;               // 0: the model's maxSeqLen
    int microbatchesInFlight = 4; // between their forward and backward, at once
    double memoryFraction = 0.9;  // of deviceBytes a stage may plan on (fragmentation, the context)
    std::vector<MemoryLayout> layouts = builtLayouts();
};

struct MemoryPlan {
    bool fits = false;
    MemoryLayout layout;          // the first that fits; else the most frugal tried
    MemoryEstimate parts;         // by part, for that layout (optimizerBytes as laid out)
    std::int64_t deviceBytes = 0; // what the layout needs on the device
    std::int64_t hostBytes = 0;   // beyond it, in host memory (only the host-optimizer layout)
    std::int64_t usableBytes = 0;
    // Graphs the engine may keep (StageEngineOptions::maxKept): as many microbatches as fit, ≤ 64.
    std::int64_t maxKept = 0;
    std::string reason; // when it does not fit: what the stage needs and what the device has
};

// AdamW's two moments for `parameters` values at `bits` (32, or 8 with a scale per 256 each).
std::int64_t momentBytes(std::int64_t parameters, int bits);

// Throws std::invalid_argument on a stage, shape or dtype out of range (see estimateStageMemory).
MemoryPlan planStageMemory(const ModelConfig& config, int stage, const MemoryPlanRequest& request);

// "21.3 GiB": binary units, one decimal.
std::string formatBytes(std::int64_t bytes);

} // namespace tessera::gpu
