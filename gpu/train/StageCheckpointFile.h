// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageCheckpointFile: one stage's checkpoint kept on disk, not in memory — the coordinator's copy of
// what the replicas hold (weights and AdamW's moments), read and changed a chunk at a time, so the
// coordinator of an 8b run holds megabytes, not the 32 GB of its stages' weights.
//
// Files (all in the work directory, removed when the object goes):
//   the published shard   read-only; the weights are read from it until the first change
//   stage-S.weights       the weights as the shard's data buffer lays them out (fp32), made by copying
//                         the shard's at the first change
//   stage-S.first/second  AdamW's moments, made at the first applied step (sparse: zeros cost no disk):
//                         fp32 per weight, or with 8-bit moments their codes (one byte per weight,
//                         padded to whole 256-value blocks) followed by the blocks' fp32 scales
// Each step's moments start afresh when the coordinator starts (as the in-memory checkpoint did).
//
// Every operation equals what a gpu::StageEngine holding the same weights does, to the bit:
// gatherPartition/setPartition deal SPARTA partitions as Sparta does (train/SpartaPartitions),
// applyGradients steps AdamW as StageOptimizer::stepAgreed does (a chunk at a time: the update is
// elementwise and 8-bit codes are per block, chunks start on block boundaries). Torch-free header.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/ShardManifest.h"
#include "base/WeightFingerprint.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tessera::gpu {

class StageCheckpointFile {
public:
    static constexpr std::int64_t kDefaultChunkValues = 4 << 20; // 16 MiB of fp32 at a time

    // Verifies `shard` against `manifest` (size, every chunk, whole hash) and checks it holds exactly
    // this model's stage: the tensors, their order and shapes the stage has. `afterChunk`: as
    // ShardManifest::verifyFile's (the bytes of the shard verified so far; an error stops).
    static Result<std::unique_ptr<StageCheckpointFile>>
    open(const ModelConfig& config, int stage, const std::filesystem::path& shard,
         const ShardManifest& manifest, const std::filesystem::path& workDir,
         std::int64_t chunkValues = kDefaultChunkValues,
         const std::function<Status(std::uint64_t bytesVerified)>& afterChunk = {});
    ~StageCheckpointFile();
    StageCheckpointFile(const StageCheckpointFile&) = delete;
    StageCheckpointFile& operator=(const StageCheckpointFile&) = delete;

    std::int64_t parameterCount() const;
    std::vector<std::vector<std::int64_t>> parameterShapes() const; // the gradient exchange's order
    std::int64_t steps() const;                                     // AdamW steps applied since open

    // SPARTA partition `partition` of `partitions` (-1: every one in order, what a node's sync_request
    // answer holds).
    Result<std::int64_t> partitionSize(int partition, int partitions) const;
    Result<std::vector<float>> gatherPartition(int partition, int partitions) const;
    Status setPartition(int partition, int partitions, std::span<const float> values);
    // Weights [offset, offset + count) in parameter order (each parameter flattened, one after the
    // other): a ghost sync's chunk, read from disk without the rest.
    Result<std::vector<float>> readRange(std::int64_t offset, std::int64_t count) const;
    // The same over the stage's whole state: AdamW's first and second moments, then the weights
    // (3 × parameterCount() values, StateRegion's order; moments zeros before the first step).
    // 32-bit moments only.
    Result<std::vector<float>> readStateRange(std::int64_t offset, std::int64_t count) const;
    bool stateSync() const; // its moments are 32-bit (readStateRange works)
    // A step's averaged gradient (a GradientRoundCombiner's result for this rank) applied as every
    // replica applies it: scaled by clipScale, one AdamW step at learningRate. fingerprint (fresh, of
    // a seed): the updated weights added to it in the same pass (what the replicas must answer).
    Status applyGradients(int rank, std::span<const float> result, double learningRate, double clipScale,
                          WeightFingerprint* fingerprint = nullptr);

    // Writes the current weights as a shard of `version` at `step` (atomically, streamed) and returns
    // its manifest (unsigned, file name = file's).
    Result<ShardManifest> save(const std::filesystem::path& file, std::int64_t version,
                               std::int64_t step) const;

private:
    struct State;
    explicit StageCheckpointFile(std::unique_ptr<State> state);
    std::unique_ptr<State> m_state;
};

} // namespace tessera::gpu
