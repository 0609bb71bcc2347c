// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrainingData: the run's training tokens as ready-to-send token frames — stage 0's inputs and
// the last stage's targets of one microbatch — behind a torch-free header, so the coordinator
// (core/, no torch) can feed the swarm from DataSource.

#include "base/Result.h"
#include "base/TokenFrame.h"

#include <cstdint>
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
    static Result<std::unique_ptr<TrainingData>> open(const std::string& spec, int vocabSize,
                                                      std::uint64_t seed, std::uint64_t orderSeed);
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
