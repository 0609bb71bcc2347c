// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageEngine::State: what a StageEngine holds (the model, the codec, the optimizer, the kept
// graphs, the SPARTA split) and the decoding of its inputs, plus the small helpers the engine's
// functions share. Internal to gpu/engine (includes torch).

#include "engine/StageEngine.h"
#include "engine/WeightVersions.h"

#include "codec/Codec.h"
#include "model/StageModel.h"
#include "train/GradientExchange.h"
#include "train/Sparta.h"
#include "train/StageOptimizer.h"

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::gpu {

namespace engine_detail {

std::string str(std::int64_t v);
Result<torch::Device> parseDevice(const std::string& name);
Result<torch::ScalarType> resolveComputeDtype(std::optional<Dtype> asked, torch::Device device);
Status checkOptimizer(const OptimizerOptions& o);
std::string countWords(std::int64_t n);
std::uint64_t splitmix64(std::uint64_t& state);
std::vector<std::int32_t> seededIds(std::int64_t count, int vocab, std::uint64_t seed);
torch::Tensor idsTensor(const std::vector<std::int32_t>& ids, int batch, int seq);
Status checkPartition(int partition, int partitions);
std::string partitionName(int partition, int partitions);
Status checkFinite(std::span<const float> values, const char* what);
std::int64_t saturatingFlop(std::int64_t factor, std::int64_t parameters, std::int64_t tokens);

} // namespace engine_detail

struct StageEngine::State {
    // What forward decoded: the stage's input tensor and the token ids the next frame carries.
    struct Input {
        torch::Tensor x;      // stage 0: ids [B, T] int64; else hidden [B, T, d] fp32
        torch::Tensor tokens; // [B, T] int64
        int batch = 0;
        int seq = 0;
    };
    struct Shape {
        int batch = 0;
        int seq = 0;
    };

    StageEngineOptions options;
    torch::Device device{torch::kCPU};
    std::unique_ptr<Codec> codec;
    std::unique_ptr<StageModel> model;
    std::unique_ptr<StageOptimizer> optimizer;
    std::unordered_map<std::int64_t, Shape> kept; // mirrors the model's kept graphs
    std::int64_t accumulated = 0;                 // microbatches in the parameters' .grad
    std::unique_ptr<WeightVersions> versions;     // the asynchronous pipeline's (pipelined tasks)
    // Aliases of the masters with a version counter of their own (Python's .data): the optimizer
    // steps these, so a graph kept across an update still runs backward (on its stashed weights).
    std::vector<torch::Tensor> aliases;
    // Look-ahead (the asynchronous pipeline's staleness correction): the weights run ahead of the
    // optimizer's by lookAhead times its last update, and these are the optimizer's (exact copies,
    // so every replica's optimizer holds what the coordinator's checkpoint holds). Empty while none.
    std::vector<torch::Tensor> optimizerWeights;

    // Writes `values` into the weights through the aliases (kept graphs stay usable).
    void setWeights(const std::vector<torch::Tensor>& values) {
        torch::NoGradGuard noGrad;
        for (std::size_t i = 0; i < values.size(); ++i)
            aliases[i].copy_(values[i]);
    }
    // Runs body on the optimizer's weights while the model runs ahead of them (else on the weights):
    // what it changes there is kept as the optimizer's, and the running weights come back.
    template <class Body>
    auto onOptimizerWeights(Body&& body) {
        if (optimizerWeights.empty())
            return body();
        const std::vector<torch::Tensor> running = copyOfWeights();
        setWeights(optimizerWeights);
        auto result = body();
        optimizerWeights = copyOfWeights();
        setWeights(running);
        return result;
    }
    std::vector<torch::Tensor> copyOfWeights() const {
        std::vector<torch::Tensor> copy;
        for (const torch::Tensor& a : aliases)
            copy.push_back(a.detach().clone());
        return copy;
    }

    std::unique_ptr<Sparta> sparta;                 // the partitioning last asked for (see spartaFor)
    std::unique_ptr<GradientCompressor> compressor; // made at the first exchange, at its rank
    int sharedMicrobatches = 0; // a low-rank first share's, until its second share is made

    // The compressor at `rank` and `bits` (a new one, memory empty, when there was none or another
    // rank or bits; bits 0: whatever the current one has — applying a result needs no bits).
    GradientCompressor& compressorFor(int rank, int bits = 0) {
        if (!compressor || compressor->layout().rank() != rank || (bits != 0 && compressor->bits() != bits)) {
            std::vector<torch::Tensor> parameters;
            for (const auto& [name, tensor] : model->namedParameters())
                parameters.push_back(tensor);
            compressor = std::make_unique<GradientCompressor>(
                std::move(parameters), rank, options.config.seed, 1.0, bits != 0 ? bits : 32);
        }
        return *compressor;
    }

    // Sparta over the live master tensors, built once per partition count (it shuffles every
    // block). loadShard copies into those same tensors, so the references stay valid. In fp32
    // the masters are what kept graphs saved: Sparta writes through aliases with a version
    // counter of their own (Python's .data) so those graphs still backward. In bf16 the graphs
    // hold the compute copies and the masters' version must move for StageModel to re-cast them.
    Sparta& spartaFor(int partitions) {
        if (!sparta || sparta->partitions() != partitions) {
            auto named = model->namedParameters();
            if (model->computeDtype() == torch::kFloat)
                for (auto& [name, tensor] : named)
                    tensor = tensor.variable_data();
            sparta = std::make_unique<Sparta>(std::move(named), options.config.seed, partitions);
        }
        return *sparta;
    }

    // Partition `partition`, or every one in order for -1, as [begin, end).
    static std::pair<int, int> partitionRange(int partition, int partitions) {
        return partition < 0 ? std::pair{0, partitions} : std::pair{partition, partition + 1};
    }

    std::int64_t partitionSize(int partition, int partitions) {
        Sparta& s = spartaFor(partitions);
        const auto [begin, end] = partitionRange(partition, partitions);
        std::int64_t n = 0;
        for (int p = begin; p < end; ++p)
            n += s.partitionSize(p);
        return n;
    }

    // The span as a tensor on the device (borrowed, not copied, on the CPU: read only).
    torch::Tensor onDevice(std::span<const float> values) const {
        return torch::from_blob(const_cast<float*>(values.data()), {static_cast<std::int64_t>(values.size())},
                                torch::kFloat)
            .to(device);
    }

    // Validates the arguments and the spans (sizes, finite values), then calls
    // apply(sparta, p, offset, size) for each partition in the order gatherPartition concatenates
    // them: nothing is written unless all of it is valid.
    template <class Apply>
    Status forEachPartition(int partition, int partitions,
                            std::initializer_list<std::pair<const char*, std::span<const float>>> spans,
                            Apply&& apply) {
        if (auto valid = engine_detail::checkPartition(partition, partitions); !valid)
            return valid;
        const std::int64_t size = partitionSize(partition, partitions);
        for (const auto& [what, values] : spans) {
            if (static_cast<std::int64_t>(values.size()) != size)
                return makeError("got " + engine_detail::str(static_cast<std::int64_t>(values.size())) +
                                 " values for " + what + ", the partition has " + engine_detail::str(size));
            if (auto finite = engine_detail::checkFinite(values, what); !finite)
                return finite;
        }
        Sparta& s = spartaFor(partitions);
        const auto [begin, end] = partitionRange(partition, partitions);
        std::int64_t offset = 0;
        for (int p = begin; p < end; ++p) {
            const std::int64_t n = s.partitionSize(p);
            if (n > 0)
                apply(s, p, static_cast<std::size_t>(offset), static_cast<std::size_t>(n));
            offset += n;
        }
        return {};
    }

    bool first() const { return model->isFirst(); }
    bool last() const { return model->isLast(); }

    Result<Input> decodeInput(std::span<const std::uint8_t> frame) const {
        const ModelConfig& c = options.config;
        if (first()) {
            auto tokens = decodeTokens(frame, c.vocabSize, c.maxSeqLen, options.maxTokens);
            if (!tokens)
                return makeError("input: " + tokens.message());
            const torch::Tensor ids = engine_detail::idsTensor(tokens->ids, tokens->batch, tokens->seq);
            return Input{ids, ids, tokens->batch, tokens->seq};
        }
        auto activation = codec->decodeActivation(frame);
        if (!activation)
            return makeError("input: " + activation.message());
        const auto& hidden = activation->hidden;
        return Input{hidden, activation->tokens, static_cast<int>(hidden.size(0)),
                     static_cast<int>(hidden.size(1))};
    }

    Result<torch::Tensor> decodeTargets(std::span<const std::uint8_t> frame, const Shape& shape) const {
        if (frame.empty())
            return makeError("the last stage needs the targets (a token frame)");
        const ModelConfig& c = options.config;
        auto targets = decodeTokens(frame, c.vocabSize, c.maxSeqLen, options.maxTokens);
        if (!targets)
            return makeError("targets: " + targets.message());
        if (targets->batch != shape.batch || targets->seq != shape.seq)
            return makeError("targets are " + engine_detail::str(targets->batch) + "x" +
                             engine_detail::str(targets->seq) + " tokens, the input " +
                             engine_detail::str(shape.batch) + "x" + engine_detail::str(shape.seq));
        return engine_detail::idsTensor(targets->ids, targets->batch, targets->seq);
    }

    Result<torch::Tensor> decodeGradient(std::span<const std::uint8_t> frame, const Shape& shape) const {
        if (frame.empty())
            return makeError("the gradient from stage " + engine_detail::str(options.stage + 1) +
                             " is missing");
        auto grad = codec->decodeGradient(frame);
        if (!grad)
            return makeError("gradient: " + grad.message());
        if (grad->size(0) != shape.batch || grad->size(1) != shape.seq)
            return makeError("the gradient is for " + engine_detail::str(grad->size(0)) + "x" +
                             engine_detail::str(grad->size(1)) + " tokens, the microbatch has " +
                             engine_detail::str(shape.batch) + "x" + engine_detail::str(shape.seq));
        return *grad;
    }

    Status checkShape(int batch, int seq) const {
        const std::int64_t maxSeq = options.config.maxSeqLen;
        if (batch < 1 || seq < 1 || seq > maxSeq || std::int64_t(batch) * seq > options.maxTokens)
            return makeError("a microbatch must be at least 1x1, at most max_seq_len " +
                             engine_detail::str(maxSeq) + " long and " +
                             engine_detail::str(options.maxTokens) + " tokens: got " +
                             engine_detail::str(batch) + "x" + engine_detail::str(seq));
        return {};
    }

    void dropAllKept() {
        for (const auto& [id, shape] : kept)
            model->dropKept(id);
        kept.clear();
        versions->reset();
    }

    // A ghost sync's chunk: weights [offset, offset + size) in parameter order (StageEngine's).
    Status setWeightsRange(std::int64_t offset, std::int64_t total, std::span<const float> values);

    // The weights were replaced (a load, a full sync): they are the optimizer's, without look-ahead.
    void weightsReplaced() {
        optimizerWeights.clear();
        model->weightsChanged();
    }

    // Graphs kept by synchronous forwards hold the weights an update replaces; pipelined ones have
    // their weights stashed and stay.
    void dropUnversionedKept() {
        std::erase_if(kept, [&](const auto& k) {
            if (versions->recorded(k.first))
                return false;
            model->dropKept(k.first);
            return true;
        });
    }

    // AdamW (through `run`) on the aliases, the gradients moved onto them first; then the weights
    // run ahead of the optimizer's by lookAhead times the update just made (0: they do not).
    bool stepOptimizer(const std::function<bool(StageOptimizer&)>& run, double lookAhead = 0) {
        const auto parameters = model->namedParameters();
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            aliases[i].mutable_grad() = parameters[i].second.grad();
            parameters[i].second.mutable_grad() = torch::Tensor();
        }
        versions->beforeUpdate(); // stashes the weights as microbatches ran on them, look-ahead included
        if (!optimizerWeights.empty())
            setWeights(std::exchange(optimizerWeights, {}));
        const std::vector<torch::Tensor> before =
            lookAhead > 0 ? copyOfWeights() : std::vector<torch::Tensor>();
        const bool ok = run(*optimizer);
        if (lookAhead > 0 && ok) {
            torch::NoGradGuard noGrad;
            optimizerWeights = copyOfWeights();
            for (std::size_t i = 0; i < aliases.size(); ++i)
                aliases[i].add_((optimizerWeights[i] - before[i]).mul_(lookAhead));
        }
        versions->afterUpdate();
        model->weightsChanged();
        return ok;
    }

    StageBackwardResult finish(const BackwardResult& back, const Shape& shape, bool pipelined) {
        if (!pipelined)
            ++accumulated;
        StageBackwardResult result;
        result.tokens = std::int64_t(shape.batch) * shape.seq;
        if (!first()) {
            result.gradInput.assign(options.outputHeadroom, 0);
            codec->encodeGradient(back.gradInput, torch::Tensor(), result.gradInput);
        }
        if (last())
            result.loss = back.loss.item<double>();
        return result;
    }
};

} // namespace tessera::gpu
