// SPDX-License-Identifier: Apache-2.0
#include "engine/StageEngine.h"

#include "base/BlockQuant.h"

#include "engine/StageEngineState.h"

#include "codec/Codec.h"
#include "device/CudaBackend.h"
#include "model/StageModel.h"
#include "shard/StageShard.h"
#include "train/Sparta.h"
#include "train/StageOptimizer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>

namespace tessera::gpu {

namespace {

using namespace engine_detail;

// Runs body, turning any exception into an Error, and prefixes every error with what was being
// done (the node logs it as is). c10::Error's what() carries a C++ backtrace; what a user can act
// on is the message without it.
template <class Body>
auto guarded(const std::string& what, Body&& body) -> decltype(body()) {
    try {
        auto result = body();
        if (!result.ok())
            return makeError(what + ": " + result.message(), result.kind());
        return result;
    } catch (const c10::Error& e) {
        return makeError(what + ": " + e.what_without_backtrace());
    } catch (const std::exception& e) {
        return makeError(what + ": " + e.what());
    } catch (...) {
        return makeError(what + ": unknown exception");
    }
}

} // namespace

StageEngine::StageEngine(std::unique_ptr<State> state)
    : m_state(std::move(state)) {}

StageEngine::~StageEngine() = default;

Result<std::unique_ptr<StageEngine>> StageEngine::create(const StageEngineOptions& options) {
    const ModelConfig& config = options.config;
    if (auto valid = config.validate(); !valid)
        return makeError("model config: " + valid.message());
    if (options.stage < 0 || options.stage >= config.stages)
        return makeError("stage " + str(options.stage) + " is not in [0, " + str(config.stages) + ")");
    if (options.maxTokens < 1 || options.maxTokens > (std::int64_t(1) << 24))
        return makeError("max tokens per frame must be between 1 and 16777216");
    if (options.outputHeadroom > (std::size_t(1) << 20))
        return makeError("the output headroom must be at most 1 MiB");
    if (auto valid = checkOptimizer(options.optimizer); !valid)
        return valid.error();
    return guarded("could not build stage " + str(options.stage),
                   [&]() -> Result<std::unique_ptr<StageEngine>> {
                       auto device = parseDevice(options.device);
                       if (!device)
                           return device.error();
                       auto dtype = resolveComputeDtype(options.computeDtype, *device);
                       if (!dtype)
                           return dtype.error();
                       CodecOptions codecOptions;
                       codecOptions.activationDtype = options.activationDtype;
                       codecOptions.gradientDtype = options.gradientDtype;
                       codecOptions.maxTokens = options.maxTokens;
                       codecOptions.device = *device; // the codec computes beside the stage
                       auto codec = makeCodec(config, codecOptions);
                       if (!codec)
                           return codec.error();

                       auto state = std::make_unique<State>();
                       state->options = options;
                       state->device = *device;
                       state->codec = std::move(*codec);
                       state->model = std::make_unique<StageModel>(config, options.stage, *device, *dtype);
                       state->model->setRecomputePerBlock(options.recomputePerBlock);
                       for (const auto& [name, tensor] : state->model->namedParameters())
                           state->aliases.push_back(tensor.variable_data().requires_grad_());
                       OptimizerOptions optimizer = options.optimizer;
                       optimizer.momentBits = config.momentBits; // the run's, on every replica
                       state->optimizer = std::make_unique<StageOptimizer>(state->aliases, optimizer);
                       state->versions = std::make_unique<WeightVersions>(*state->model);
                       return std::unique_ptr<StageEngine>(new StageEngine(std::move(state)));
                   });
}

Status StageEngine::loadShard(const std::filesystem::path& file, const ShardManifest& manifest) {
    return guarded("loading " + file.filename().string(), [&]() -> Status {
        if (auto loaded = loadStageShard(*m_state->model, file, &manifest); !loaded)
            return loaded;
        // Graphs and gradients made with the old weights mean nothing for the new ones.
        m_state->dropAllKept();
        m_state->weightsReplaced();
        m_state->model->zeroGrad();
        m_state->accumulated = 0;
        return {};
    });
}

Result<ShardManifest> StageEngine::saveShard(const std::filesystem::path& file, std::int64_t version,
                                             std::int64_t step) {
    return guarded("saving " + file.filename().string(),
                   [&] { return writeStageShard(*m_state->model, file, version, step); });
}

Result<StageForwardResult> StageEngine::forward(std::int64_t microbatch, std::span<const std::uint8_t> input,
                                                std::span<const std::uint8_t> targets, std::int64_t step) {
    State& st = *m_state;
    return guarded("stage " + str(st.options.stage), [&]() -> Result<StageForwardResult> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        const State::Shape shape{in->batch, in->seq};
        torch::Tensor target;
        if (st.last()) {
            auto decoded = st.decodeTargets(targets, shape);
            if (!decoded)
                return decoded.error();
            target = *decoded;
        }
        torch::Tensor out;
        if (st.options.keepActivations) {
            // Bounded: the oldest graph goes first (its backward then recomputes from the input).
            while (!st.kept.empty() && std::int64_t(st.kept.size()) >= st.options.maxKept) {
                const auto oldest =
                    std::min_element(st.kept.begin(), st.kept.end(),
                                     [](const auto& a, const auto& b) { return a.first < b.first; });
                const std::int64_t id = oldest->first;
                drop(id);
            }
            out = st.model->forwardKeep(microbatch, in->x, target);
            st.kept[microbatch] = shape;
        } else {
            out = st.model->forward(in->x, target);
        }
        if (step >= 0) {
            st.versions->admit(step);
            st.versions->recordForward(microbatch, step);
        } else
            st.versions->forget(microbatch);
        StageForwardResult result;
        result.tokens = std::int64_t(shape.batch) * shape.seq;
        if (st.last())
            result.loss = out.item<double>();
        else {
            result.output.assign(st.options.outputHeadroom, 0);
            st.codec->encodeActivation(out, in->tokens, result.output);
        }
        return result;
    });
}

Result<StageBackwardResult> StageEngine::backward(std::int64_t microbatch,
                                                  std::span<const std::uint8_t> gradOutput,
                                                  std::span<const std::uint8_t> input,
                                                  std::span<const std::uint8_t> targets) {
    State& st = *m_state;
    return guarded("stage " + str(st.options.stage), [&]() -> Result<StageBackwardResult> {
        // A pipelined microbatch runs backward on the weights its forward ran on.
        const bool pipelined = st.versions->recorded(microbatch);
        const auto run = [&](const std::function<BackwardResult()>& body) -> Result<BackwardResult> {
            if (!pipelined)
                return body();
            BackwardResult back;
            if (auto ran = st.versions->backward(microbatch, [&] { back = body(); }); !ran)
                return ran.error();
            return back;
        };
        if (const auto it = st.kept.find(microbatch); it != st.kept.end()) {
            const State::Shape shape = it->second;
            torch::Tensor grad;
            if (!st.last()) {
                auto decoded = st.decodeGradient(gradOutput, shape);
                if (!decoded) // the kept graph stays: a correct gradient may follow
                    return decoded.error();
                grad = *decoded;
            }
            // The model consumes the graph even if its backward throws: forget it first.
            st.kept.erase(it);
            auto back = run([&] { return st.model->backward(microbatch, grad); });
            if (!back) {
                st.model->dropKept(microbatch);
                return back.error();
            }
            return st.finish(*back, shape, pipelined);
        }
        if (input.empty())
            return makeError("no activations are kept for microbatch " + str(microbatch) +
                                 ": pass its forward input to recompute",
                             ErrorKind::MissingGraph);
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        const State::Shape shape{in->batch, in->seq};
        auto second = st.last() ? st.decodeTargets(targets, shape) : st.decodeGradient(gradOutput, shape);
        if (!second)
            return second.error();
        auto back = run([&] { return st.model->backward(in->x, *second); });
        if (!back)
            return back.error();
        return st.finish(*back, shape, pipelined);
    });
}

void StageEngine::drop(std::int64_t microbatch) {
    m_state->kept.erase(microbatch);
    m_state->model->dropKept(microbatch);
    m_state->versions->forget(microbatch);
}

Status StageEngine::isolated(const std::function<Status()>& body) {
    State& st = *m_state;
    try {
        std::vector<torch::Tensor> saved;
        const auto parameters = st.model->namedParameters();
        saved.reserve(parameters.size());
        for (const auto& [name, p] : parameters)
            saved.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
        const std::int64_t accumulated = st.accumulated;
        const Status result = body();
        for (std::size_t i = 0; i < parameters.size(); ++i)
            parameters[i].second.mutable_grad() = saved[i];
        st.accumulated = accumulated;
        return result;
    } catch (const std::exception& e) {
        return makeError(std::string("isolated run: ") + e.what());
    }
}

Status StageEngine::step(int microbatches) {
    State& st = *m_state;
    if (microbatches < 0)
        return makeError("step: the microbatch count must be non-negative, got " + str(microbatches));
    return guarded("step " + str(steps() + 1), [&]() -> Status {
        st.dropAllKept(); // they hold the weights this step replaces
        const std::int64_t accumulated = st.accumulated;
        st.accumulated = 0;
        if (microbatches > 0 && accumulated > 0) {
            if (!st.stepOptimizer([&](StageOptimizer& o) { return o.step(microbatches); })) // zeroes them
                return makeError("the accumulated gradients are not finite: the step was not applied");
        } else {
            st.model->zeroGrad();
        }
        return {};
    });
}

Result<GradientShare> StageEngine::shareGradients(int rank, std::int64_t basis, std::int64_t step, int bits) {
    State& st = *m_state;
    if (rank < 0 || rank > 1024 || basis < 0)
        return makeError("gradient exchange: rank must be within 0..1024 and the basis round ≥ 0, got rank " +
                             str(rank) + ", basis " + str(basis),
                         ErrorKind::InvalidInput);
    if (!validQuantBits(bits) || (bits != 32 && rank != 0))
        return makeError("gradient exchange: a share travels in 32 bits, or in 8 or 4 at rank 0; got " +
                             str(bits) + " bits at rank " + str(rank),
                         ErrorKind::InvalidInput);
    return guarded("sharing the gradients", [&]() -> Result<GradientShare> {
        st.compressorFor(rank, bits);
        if (basis == 0 && st.compressor->basisRound() != 0)
            st.compressor->resetBasis(); // the combiner started afresh
        // Pipelined: this step's gradients (the next step's stay apart), with what a synchronous
        // task may have added.
        const std::int64_t microbatches = st.accumulated + (step >= 0 ? st.versions->takeStep(step) : 0);
        st.compressor->collect();
        GradientShare share;
        share.microbatches = static_cast<int>(std::min<std::int64_t>(microbatches, 1'000'000'000));
        st.accumulated = 0;
        share.basisRound = st.compressor->basisRound();
        share.hasBasis = share.basisRound == basis || !st.compressor->layout().lowRank();
        share.firstRound = st.compressor->layout().lowRank();
        st.sharedMicrobatches = 0;
        if (share.hasBasis && share.microbatches > 0 && share.firstRound) {
            share.values = st.compressor->basisShare(share.microbatches);
            st.sharedMicrobatches = share.microbatches; // the second share divides by the same
        } else if (share.hasBasis && share.microbatches > 0) {
            share.values = st.compressor->share(share.microbatches).value(); // dense: no basis to refuse
        }
        return share;
    });
}

Result<std::vector<float>> StageEngine::shareOnBasis(int rank, std::span<const float> basis) {
    State& st = *m_state;
    if (!st.compressor || st.compressor->layout().rank() != rank || st.sharedMicrobatches < 1)
        return makeError("gradient exchange: a basis at rank " + str(rank) +
                             " with no first share of this step to build on",
                         ErrorKind::InvalidInput);
    return guarded("sharing the gradients on the basis", [&]() -> Result<std::vector<float>> {
        Result<std::vector<float>> values = st.compressor->share(st.sharedMicrobatches, basis);
        if (!values)
            return Error{values.message(), ErrorKind::InvalidInput};
        st.sharedMicrobatches = 0; // one second share per first
        return values;
    });
}

Status StageEngine::applyGradients(int rank, std::span<const float> result, bool included, std::int64_t round,
                                   double learningRate, double clipScale, double lookAhead) {
    State& st = *m_state;
    if (rank < 0 || rank > 1024)
        return makeError("gradient exchange: rank must be within 0..1024, got " + str(rank),
                         ErrorKind::InvalidInput);
    if (!(clipScale > 0 && clipScale <= 1) || !(learningRate >= 0 && learningRate < 1) ||
        !(lookAhead >= 0 && lookAhead <= 4))
        return makeError("gradient exchange: the clip scale must be in (0, 1], the learning rate in [0, 1) "
                         "and the look-ahead in [0, 4]",
                         ErrorKind::InvalidInput);
    return guarded("applying the averaged gradients", [&]() -> Status {
        st.dropUnversionedKept(); // they hold the weights this step replaces
        if (auto applied = st.compressorFor(rank).apply(result, included, round); !applied)
            return Error{applied.message(), ErrorKind::InvalidInput};
        if (!st.stepOptimizer([&](StageOptimizer& o) { return o.stepAgreed(learningRate, clipScale); },
                              lookAhead))
            return makeError("the averaged gradients are not finite: the step was not applied");
        return {};
    });
}

std::vector<std::vector<std::int64_t>> StageEngine::parameterShapes() const {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto& [name, tensor] : m_state->model->namedParameters())
        shapes.emplace_back(tensor.sizes().begin(), tensor.sizes().end());
    return shapes;
}

Result<std::vector<float>> StageEngine::gatherPartition(int partition, int partitions,
                                                        bool optimizers) const {
    State& st = *m_state;
    return guarded("gathering " + partitionName(partition, partitions), [&]() -> Result<std::vector<float>> {
        if (auto valid = checkPartition(partition, partitions); !valid)
            return valid.error();
        if (optimizers && !st.optimizerWeights.empty())
            return st.onOptimizerWeights([&] { return gatherPartition(partition, partitions, false); });
        std::vector<float> out;
        out.reserve(static_cast<std::size_t>(st.partitionSize(partition, partitions)));
        Sparta& sparta = st.spartaFor(partitions);
        const auto [begin, end] = State::partitionRange(partition, partitions);
        for (int p = begin; p < end; ++p) {
            const torch::Tensor values = sparta.gather(p).contiguous(); // fp32, on the CPU
            const float* data = values.data_ptr<float>();
            out.insert(out.end(), data, data + values.numel());
        }
        return out;
    });
}

Result<std::int64_t> StageEngine::partitionSize(int partition, int partitions) const {
    State& st = *m_state;
    return guarded("sizing " + partitionName(partition, partitions), [&]() -> Result<std::int64_t> {
        if (auto valid = checkPartition(partition, partitions); !valid)
            return valid.error();
        return st.partitionSize(partition, partitions);
    });
}

Status StageEngine::applyPartitionDelta(int partition, int partitions, std::span<const float> average,
                                        std::span<const float> snapshot) {
    State& st = *m_state;
    return guarded("averaging " + partitionName(partition, partitions), [&]() -> Status {
        const auto apply = [&] {
            return st.forEachPartition(partition, partitions,
                                       {{"the average", average}, {"the snapshot", snapshot}},
                                       [&](Sparta& sparta, int p, std::size_t offset, std::size_t n) {
                                           sparta.applyDelta(p, st.onDevice(average.subspan(offset, n)),
                                                             st.onDevice(snapshot.subspan(offset, n)));
                                       });
        };
        // The delta moves the optimizer's weights and the running ones alike.
        if (!st.optimizerWeights.empty())
            if (Status s = st.onOptimizerWeights(apply); !s)
                return s;
        return apply();
    });
}

Status StageEngine::setPartition(int partition, int partitions, std::span<const float> values) {
    State& st = *m_state;
    return guarded("setting " + partitionName(partition, partitions), [&]() -> Status {
        Status set = st.forEachPartition(partition, partitions, {{"the weights", values}},
                                         [&](Sparta& sparta, int p, std::size_t offset, std::size_t n) {
                                             sparta.scatter(p, st.onDevice(values.subspan(offset, n)));
                                         });
        if (set && partition < 0)
            st.weightsReplaced(); // a full sync: the optimizer's weights, no look-ahead
        return set;
    });
}

Status StageEngine::setWeightsRange(std::int64_t offset, std::int64_t total, std::span<const float> values) {
    return guarded("setting weights " + str(offset) + "+" + str(static_cast<std::int64_t>(values.size())),
                   [&] { return m_state->setWeightsRange(offset, total, values); });
}

std::int64_t StageEngine::steps() const {
    return m_state->optimizer->steps();
}

std::int64_t StageEngine::parameterCount() const {
    return m_state->model->parameterCount();
}

int StageEngine::stage() const {
    return m_state->options.stage;
}

const ModelConfig& StageEngine::config() const {
    return m_state->options.config;
}

std::int64_t StageEngine::keptCount() const {
    return static_cast<std::int64_t>(m_state->model->keptCount());
}

std::int64_t StageEngine::accumulatedMicrobatches() const {
    return m_state->accumulated + m_state->versions->microbatchesHeld();
}

std::string StageEngine::device() const {
    return m_state->device.str();
}

Dtype StageEngine::computeDtype() const {
    return m_state->model->computeDtype() == torch::kBFloat16 ? Dtype::BF16 : Dtype::F32;
}

std::int64_t StageEngine::forwardFlop(std::int64_t parameters, std::int64_t tokens) {
    return saturatingFlop(2, parameters, tokens);
}

std::int64_t StageEngine::backwardFlop(std::int64_t parameters, std::int64_t tokens) {
    return saturatingFlop(4, parameters, tokens);
}

Result<Bytes> StageEngine::syntheticInput(int batch, int seq, std::uint64_t seed) const {
    const State& st = *m_state;
    if (auto valid = st.checkShape(batch, seq); !valid)
        return valid.error();
    return guarded("synthetic input", [&]() -> Result<Bytes> {
        const auto ids = seededIds(std::int64_t(batch) * seq, st.options.config.vocabSize, seed);
        if (st.first())
            return encodeTokens(ids, batch, seq);
        // Unit-RMS hidden states, like the embeddings a real stage 0 sends.
        auto generator = at::detail::createCPUGenerator(seed);
        const auto hidden = torch::randn({batch, seq, st.options.config.dModel}, generator);
        return st.codec->encodeActivation(hidden, idsTensor(ids, batch, seq));
    });
}

Result<Bytes> StageEngine::syntheticTargets(int batch, int seq, std::uint64_t seed) const {
    const State& st = *m_state;
    if (auto valid = st.checkShape(batch, seq); !valid)
        return valid.error();
    // A different stream from the input's ids of the same seed.
    return encodeTokens(seededIds(std::int64_t(batch) * seq, st.options.config.vocabSize, ~seed), batch, seq);
}

Result<Bytes> StageEngine::syntheticGradient(int batch, int seq, std::uint64_t seed) const {
    const State& st = *m_state;
    if (auto valid = st.checkShape(batch, seq); !valid)
        return valid.error();
    return guarded("synthetic gradient", [&]() -> Result<Bytes> {
        // The gradient of a mean loss over B·T tokens is about 1/(B·T) per token.
        auto generator = at::detail::createCPUGenerator(seed);
        const auto grad = torch::randn({batch, seq, st.options.config.dModel}, generator) /
                          static_cast<double>(std::int64_t(batch) * seq);
        return st.codec->encodeGradient(grad, torch::Tensor());
    });
}

std::string StageEngine::describe() const {
    const State& st = *m_state;
    const ModelConfig& c = st.options.config;
    return "stage " + str(st.options.stage) + "/" + str(c.stages) + " of " + c.name + " on " + device() +
           " (" + std::string(dtypeName(computeDtype())) + "), " + countWords(parameterCount()) +
           " parameters, codec " + st.codec->describe();
}

} // namespace tessera::gpu
