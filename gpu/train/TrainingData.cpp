// SPDX-License-Identifier: Apache-2.0
#include "train/TrainingData.h"

#include "train/DataSource.h"

#include <c10/util/Exception.h>

#include <vector>

namespace tessera::gpu {

namespace {

// The most B·T one microbatch may hold: StageEngine's bound on a frame (16 Mi tokens).
constexpr std::int64_t kMaxTokens = std::int64_t(1) << 24;

// Columns [from, from + seq) of a [B, T+1] int64 window batch, as the frame's int32 ids.
std::vector<std::int32_t> columns(const torch::Tensor& windows, int from, int seq) {
    const torch::Tensor ids = windows.narrow(1, from, seq).to(torch::kInt).contiguous();
    const auto* data = ids.data_ptr<std::int32_t>();
    return {data, data + ids.numel()};
}

} // namespace

TrainingData::TrainingData(std::unique_ptr<DataSource> source)
    : m_source(std::move(source)) {}

TrainingData::~TrainingData() = default;

Result<std::unique_ptr<TrainingData>>
TrainingData::open(const std::string& spec, int vocabSize, std::uint64_t seed, std::uint64_t orderSeed,
                   const std::function<Status(std::int64_t)>& afterChunk) {
    try {
        auto source = DataSource::open(spec, vocabSize, seed, orderSeed, afterChunk);
        if (!source)
            return source.error();
        return std::unique_ptr<TrainingData>(new TrainingData(std::move(*source)));
    } catch (const std::exception& e) {
        return makeError("data source '" + spec + "': " + e.what());
    }
}

Result<TrainingMicrobatch> TrainingData::next(int batch, int seq, int stream) {
    const auto str = [](auto v) { return std::to_string(v); };
    if (batch < 1 || seq < 1 || std::int64_t(batch) * seq > kMaxTokens)
        return makeError("training data: a microbatch must be at least 1x1 and at most " + str(kMaxTokens) +
                         " tokens, got " + str(batch) + "x" + str(seq));
    if (stream != 0 && stream != 1)
        return makeError("training data: stream " + str(stream) +
                         " is neither 0 (training) nor 1 (held out)");
    try {
        const torch::Tensor windows = m_source->nextBatch(batch, seq, stream); // [B, T+1]
        auto inputs = encodeTokens(columns(windows, 0, seq), batch, seq);
        if (!inputs)
            return inputs.error();
        auto targets = encodeTokens(columns(windows, 1, seq), batch, seq);
        if (!targets)
            return targets.error();
        return TrainingMicrobatch{std::move(*inputs), std::move(*targets), std::int64_t(batch) * seq};
    } catch (const c10::Error& e) {
        return makeError(std::string("training data: ") + e.what_without_backtrace());
    } catch (const std::exception& e) {
        return makeError(std::string("training data: ") + e.what());
    }
}

std::int64_t TrainingData::bytesToCheck(const std::string& spec) {
    return DataSource::bytesToCheck(spec);
}

void TrainingData::reorder(std::uint64_t orderSeed) {
    m_source->reorder(orderSeed);
}

double TrainingData::entropyFloor() const {
    return m_source->entropyFloor();
}

std::string TrainingData::description() const {
    return m_source->description();
}

} // namespace tessera::gpu
