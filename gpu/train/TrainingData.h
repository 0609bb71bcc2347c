// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrainingData: the run's training tokens as ready-to-send token frames — stage 0's inputs and
// the last stage's targets of one microbatch — behind a torch-free header, so the coordinator
// (core/, no torch) can feed the swarm from DataSource.

#include "base/Result.h"
#include "base/TokenFrame.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tessera::gpu {

class DataSource;

struct TrainingMicrobatch {
    Bytes inputs;            // token frame [batch, seq]
    Bytes targets;           // token frame [batch, seq]: the inputs shifted by one
    std::int64_t tokens = 0; // batch·seq
};

class TrainingData {
public:
    // spec: DataSource's ("synthetic", "text:PATH", "tokens16:PATH", "tokens32:PATH"). `seed` makes
    // the synthetic corpus (the run's: fixed), `orderSeed` the order windows are drawn in.
    // afterChunk (when set) is told the bytes of each MiB of a file or dataset checked; an error from
    // it stops the check with its words.
    static Result<std::unique_ptr<TrainingData>>
    open(const std::string& spec, int vocabSize, std::uint64_t seed, std::uint64_t orderSeed,
         const std::function<Status(std::int64_t bytes)>& afterChunk = {});
    // The bytes open's check reads and tells afterChunk (0: none, or unknown before the check).
    static std::int64_t bytesToCheck(const std::string& spec);
    // The windows from here on are drawn in the order `orderSeed` makes, as if opened with it (data
    // checked before the run's step was known).
    void reorder(std::uint64_t orderSeed);
    ~TrainingData();
    TrainingData(const TrainingData&) = delete;
    TrainingData& operator=(const TrainingData&) = delete;

    // The next seeded window batch; stream 0 = training, 1 = held out.
    Result<TrainingMicrobatch> next(int batch, int seq, int stream = 0);
    double entropyFloor() const; // nats per token; negative when unknown
    std::string description() const;

private:
    explicit TrainingData(std::unique_ptr<DataSource> source);
    std::unique_ptr<DataSource> m_source;
};

} // namespace tessera::gpu
