// SPDX-License-Identifier: Apache-2.0
// StageEngine: the helpers (devices, dtypes, optimizer checks, seeded ids, partitions, FLOPs), the
// engine's state (StageEngine::State: its torch half, which the torch-free header cannot name), then
// the facade's functions, each guarded so nothing throws out.
#include "engine/StageEngine.h"

#include "base/BlockQuant.h"
#include "base/CountSketch.h"

#include "engine/WeightVersions.h"

#include "codec/Codec.h"
#include "device/CudaBackend.h"
#include "model/StageModel.h"
#include "shard/StageShard.h"
#include "train/GradientExchange.h"
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
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::gpu {

namespace {

std::string str(std::int64_t v) {
    return std::to_string(v);
}

// "cpu", "cuda" or "cuda:N", checked against what this LibTorch and machine have.
Result<torch::Device> parseDevice(const std::string& name) {
    if (name == "cpu")
        return torch::Device(torch::kCPU);
    int index = 0;
    if (name != "cuda") {
        const std::string_view digits = name.starts_with("cuda:") ? std::string_view(name).substr(5) : "";
        const char* last = digits.data() + digits.size();
        if (digits.empty() || std::from_chars(digits.data(), last, index).ptr != last || index < 0)
            return makeError("unknown device '" + name + "': use \"cpu\" or \"cuda:N\"");
    }
    if (!at::hasCUDA())
        return makeError("device '" + name +
                         "': this build's LibTorch has no CUDA support (CPU only); "
                         "use \"cpu\", or build against a CUDA LibTorch");
    const auto count = static_cast<int>(torch::cuda::device_count());
    if (index >= count)
        return makeError("device '" + name + "' does not exist: " +
                         (count ? "this machine has cuda:0 to cuda:" + str(count - 1)
                                : std::string("no CUDA device is visible")));
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

Result<torch::ScalarType> resolveComputeDtype(std::optional<Dtype> asked, torch::Device device) {
    if (asked == Dtype::F32)
        return torch::kFloat;
    if (asked == Dtype::BF16)
        return torch::kBFloat16;
    if (asked)
        return makeError("compute dtype " + std::string(dtypeName(*asked)) +
                         " is not supported: fp32 or bf16");
    if (!device.is_cuda())
        return torch::kFloat;
    // LibTorch's CPU headers cannot ask for the compute capability; our CUDA module can. Without
    // it, fp32 is the choice that works everywhere.
    int major = 0;
    if (auto backend = loadCudaBackend())
        if (auto info = (*backend)->deviceInfo(device.index()))
            major = info->computeMajor;
    return StageModel::computeDtypeFor(device, major);
}

Status checkOptimizer(const OptimizerOptions& o) {
    const auto finite = [](double v) { return std::isfinite(v); };
    if (!finite(o.learningRate) || o.learningRate < 0)
        return makeError("optimizer: the learning rate must be finite and non-negative");
    if (!finite(o.beta1) || !finite(o.beta2) || o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1)
        return makeError("optimizer: beta1 and beta2 must be in [0, 1)");
    if (!finite(o.weightDecay) || o.weightDecay < 0 || !finite(o.epsilon) || o.epsilon <= 0)
        return makeError("optimizer: weight decay must be non-negative and epsilon positive");
    if (o.warmupSteps < 0)
        return makeError("optimizer: warm-up steps must be non-negative");
    return {};
}

std::string countWords(std::int64_t n) {
    char buffer[32];
    if (n < 10'000)
        return str(n);
    if (n < 1'000'000)
        return str((n + 500) / 1000) + "k";
    std::snprintf(buffer, sizeof buffer, n < 1'000'000'000 ? "%.2fM" : "%.2fB",
                  static_cast<double>(n) / (n < 1'000'000'000 ? 1e6 : 1e9));
    return buffer;
}

// splitmix64: the same synthetic ids on every machine (std distributions are not portable).
std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::vector<std::int32_t> seededIds(std::int64_t count, int vocab, std::uint64_t seed) {
    std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
    for (auto& id : ids)
        id = static_cast<std::int32_t>(splitmix64(seed) % static_cast<std::uint64_t>(vocab));
    return ids;
}

torch::Tensor idsTensor(const std::vector<std::int32_t>& ids, int batch, int seq) {
    // from_blob borrows; .to(kLong) makes the tensor's own copy.
    return torch::from_blob(const_cast<std::int32_t*>(ids.data()), {batch, seq}, torch::kInt)
        .to(torch::kLong);
}

Status checkPartition(int partition, int partitions) {
    if (partitions < 1 || partitions > 1000)
        return makeError("the partition count must be between 1 and 1000, got " + str(partitions));
    if (partition < -1 || partition >= partitions)
        return makeError("partition " + str(partition) + " is not in [0, " + str(partitions) +
                         ") nor -1 (all of them)");
    return {};
}

std::string partitionName(int partition, int partitions) {
    return partition == -1 ? "all " + str(partitions) + " SPARTA partitions"
                           : "SPARTA partition " + str(partition) + "/" + str(partitions);
}

// A NaN or infinity would spread through the whole model at the next step: refuse it at the door.
Status checkFinite(std::span<const float> values, const char* what) {
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad != values.end())
        return makeError("a non-finite value at index " + str(bad - values.begin()) + " in " + what);
    return {};
}

std::int64_t saturatingFlop(std::int64_t factor, std::int64_t parameters, std::int64_t tokens) {
    if (parameters <= 0 || tokens <= 0)
        return 0;
    std::int64_t out = 0;
    if (parameters > INT64_MAX / factor || __builtin_mul_overflow(factor * parameters, tokens, &out))
        return INT64_MAX;
    return out;
}

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

// StageEngine::State: what a StageEngine holds (the model, the codec, the optimizer, the kept
// graphs, the SPARTA split) and the decoding of its inputs: the engine itself, behind the pointer
// that keeps torch out of StageEngine.h.
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
        if (auto valid = checkPartition(partition, partitions); !valid)
            return valid;
        const std::int64_t size = partitionSize(partition, partitions);
        for (const auto& [what, values] : spans) {
            if (static_cast<std::int64_t>(values.size()) != size)
                return makeError("got " + str(static_cast<std::int64_t>(values.size())) + " values for " +
                                 what + ", the partition has " + str(size));
            if (auto finite = checkFinite(values, what); !finite)
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

    // A bisection's tensor given as values (a residual, a gradient): a [B, T, d] view of them in the
    // input's shape (not a copy: the values must outlive it), or an error naming `what`.
    Result<torch::Tensor> likeInput(const Input& in, std::span<const float> values, const std::string& what) const {
        const std::int64_t width = options.config.dModel;
        if (std::int64_t(values.size()) != std::int64_t(in.batch) * in.seq * width)
            return makeError(what + " of " + std::to_string(values.size()) + " values is not the input's " +
                                 std::to_string(in.batch) + " × " + std::to_string(in.seq) + " × " +
                                 std::to_string(width),
                             ErrorKind::InvalidInput);
        return torch::from_blob(const_cast<float*>(values.data()), {in.batch, in.seq, width}, torch::kFloat);
    }

    Result<Input> decodeInput(std::span<const std::uint8_t> frame) const {
        const ModelConfig& c = options.config;
        if (first()) {
            auto tokens = decodeTokens(frame, c.vocabSize, c.maxSeqLen, options.maxTokens);
            if (!tokens)
                return makeError("input: " + tokens.message());
            const torch::Tensor ids = idsTensor(tokens->ids, tokens->batch, tokens->seq);
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
            return makeError("targets are " + str(targets->batch) + "x" + str(targets->seq) +
                             " tokens, the input " + str(shape.batch) + "x" + str(shape.seq));
        return idsTensor(targets->ids, targets->batch, targets->seq);
    }

    Result<torch::Tensor> decodeGradient(std::span<const std::uint8_t> frame, const Shape& shape) const {
        if (frame.empty())
            return makeError("the gradient from stage " + str(options.stage + 1) + " is missing");
        auto grad = codec->decodeGradient(frame);
        if (!grad)
            return makeError("gradient: " + grad.message());
        if (grad->size(0) != shape.batch || grad->size(1) != shape.seq)
            return makeError("the gradient is for " + str(grad->size(0)) + "x" + str(grad->size(1)) +
                             " tokens, the microbatch has " + str(shape.batch) + "x" + str(shape.seq));
        return *grad;
    }

    Status checkShape(int batch, int seq) const {
        const std::int64_t maxSeq = options.config.maxSeqLen;
        if (batch < 1 || seq < 1 || seq > maxSeq || std::int64_t(batch) * seq > options.maxTokens)
            return makeError("a microbatch must be at least 1x1, at most max_seq_len " + str(maxSeq) +
                             " long and " + str(options.maxTokens) + " tokens: got " + str(batch) + "x" +
                             str(seq));
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

Status StageEngine::State::setWeightsRange(std::int64_t offset, std::int64_t total,
                                           std::span<const float> values) {
    const std::int64_t count = model->parameterCount();
    const auto size = static_cast<std::int64_t>(values.size());
    // The weights alone, or AdamW's state (first moment, second, weights: 3 × count, StateRegion).
    const bool withMoments = total == kStateRegions * count && optimizer->momentsSync();
    if (total != count && !withMoments)
        return makeError("the sync is of " + str(total) + " values; this stage has " + str(count) +
                         " weights" + (optimizer->momentsSync() ? " (" + str(3 * count) + " with its moments)" : ""));
    if (offset < 0 || size == 0 || offset > total - size)
        return makeError("values " + str(offset) + "+" + str(size) + " are not within the sync's " + str(total));
    if (auto finite = checkFinite(values, "the weights"); !finite)
        return finite;
    torch::NoGradGuard noGrad;
    // The part of [offset, offset + size) that falls in region r ([r·count, (r + 1)·count)).
    const auto region = [&](int r) -> std::pair<std::int64_t, std::span<const float>> {
        const std::int64_t from = std::max(offset, r * count), to = std::min(offset + size, (r + 1) * count);
        if (from >= to)
            return {0, {}};
        return {from - r * count, values.subspan(std::size_t(from - offset), std::size_t(to - from))};
    };
    for (int r = 0; withMoments && r < kStateRegions; ++r)
        if (const auto [at, part] = region(r); !part.empty() && StateRegion(r) != StateRegion::Weights)
            (void)optimizer->setMomentsRange(StateRegion(r) == StateRegion::FirstMoment, at, part);
    const int weightsRegion = withMoments ? int(StateRegion::Weights) : 0;
    if (const auto [at, part] = region(weightsRegion); !part.empty()) {
        std::int64_t start = 0; // of the current parameter, in parameter order
        const auto n = static_cast<std::int64_t>(part.size());
        for (std::size_t i = 0; i < aliases.size(); ++i) {
            const std::int64_t numel = aliases[i].numel();
            const std::int64_t from = std::max(at, start), to = std::min(at + n, start + numel);
            if (from < to) {
                const torch::Tensor taken =
                    onDevice(part.subspan(std::size_t(from - at), std::size_t(to - from)));
                // The optimizer's weights where the running ones are ahead of them, and the running
                // ones (not ahead here until the next update): weights synced earlier keep theirs.
                for (const torch::Tensor& target :
                     {aliases[i], optimizerWeights.empty() ? torch::Tensor() : optimizerWeights[i]})
                    if (target.defined())
                        target.view({-1}).narrow(0, from - start, to - from).copy_(taken);
            }
            start += numel;
        }
        model->weightsChanged();
    }
    return {};
}

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

Result<std::vector<float>> StageEngine::gradientSketch(std::span<const std::uint8_t> gradOutput,
                                                       std::span<const std::uint8_t> input,
                                                       std::span<const std::uint8_t> targets, std::uint64_t seed) {
    State& st = *m_state;
    if (input.empty())
        return makeError("a gradient sketch needs the task's forward input", ErrorKind::InvalidInput);
    std::vector<float> buckets;
    const Status ran = isolated([&]() -> Status {
        st.model->zeroGrad(); // this microbatch's gradient alone (isolated puts the accumulated back)
        // An id no microbatch has: nothing kept is used or dropped, the forward is recomputed.
        const auto back = backward(std::numeric_limits<std::int64_t>::min(), gradOutput, input, targets);
        if (!back)
            return back.error();
        torch::NoGradGuard noGrad;
        CountSketch sketch(seed);
        for (const auto& [name, p] : st.model->namedParameters()) { // the exchange's order
            const torch::Tensor g = p.grad().defined()
                                        ? p.grad().detach().to(torch::kCPU, torch::kFloat).contiguous().view({-1})
                                        : torch::zeros({p.numel()}, torch::kFloat);
            sketch.add(std::span<const float>(g.data_ptr<float>(), std::size_t(g.numel())));
        }
        buckets = sketch.bucketsAsFloats();
        return {};
    });
    if (!ran)
        return makeError("a gradient sketch: " + ran.message(), ran.kind());
    return buckets;
}

namespace {

std::vector<float> floatsOf(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous().view({-1});
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

} // namespace

Result<std::vector<float>> StageEngine::traceForward(std::span<const std::uint8_t> input) {
    State& st = *m_state;
    return guarded("tracing a forward", [&]() -> Result<std::vector<float>> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        std::vector<float> out;
        for (const torch::Tensor& h : st.model->trace(in->x)) {
            const std::vector<float> v = floatsOf(h);
            out.insert(out.end(), v.begin(), v.end());
        }
        return out;
    });
}

Result<std::vector<float>> StageEngine::forwardSegment(int b, std::span<const std::uint8_t> input,
                                                       std::span<const float> hidden) {
    State& st = *m_state;
    return guarded("a forward's segment " + str(b), [&]() -> Result<std::vector<float>> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        Result<torch::Tensor> h = b > 0 ? st.likeInput(*in, hidden, "a segment's hidden state") : Result<torch::Tensor>(torch::Tensor());
        if (!h)
            return h.error();
        return floatsOf(st.model->segment(b, in->x, *h));
    });
}

Result<Bytes> StageEngine::encodeOutput(std::span<const std::uint8_t> input, std::span<const float> hidden) {
    State& st = *m_state;
    if (st.last())
        return makeError("the last stage sends no activation frame", ErrorKind::InvalidInput);
    return guarded("encoding a stage's output", [&]() -> Result<Bytes> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        Result<torch::Tensor> view = st.likeInput(*in, hidden, "an output's hidden state");
        if (!view)
            return view.error();
        const torch::Tensor h = view->clone();
        Bytes out;
        st.codec->encodeActivation(h, in->tokens, out);
        return out;
    });
}

Result<std::vector<float>> StageEngine::traceBackward(std::span<const std::uint8_t> gradOutput,
                                                      std::span<const std::uint8_t> input,
                                                      std::span<const std::uint8_t> targets) {
    State& st = *m_state;
    return guarded("tracing a backward", [&]() -> Result<std::vector<float>> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        const State::Shape shape{in->batch, in->seq};
        auto second = st.last() ? st.decodeTargets(targets, shape) : st.decodeGradient(gradOutput, shape);
        if (!second)
            return second.error();
        const StageModel::BackwardTrace trace = st.model->traceBackward(in->x, *second);
        std::vector<float> out;
        for (const auto* part : {&trace.residuals, &trace.gradients})
            for (const torch::Tensor& t : *part) {
                const std::vector<float> v = floatsOf(t);
                out.insert(out.end(), v.begin(), v.end());
            }
        if (st.last())
            out.push_back(trace.loss.item<float>());
        return out;
    });
}

Result<std::vector<float>> StageEngine::backwardSegment(int b, std::span<const std::uint8_t> input,
                                                        std::span<const float> before,
                                                        std::span<const float> gradAfter) {
    State& st = *m_state;
    return guarded("a backward's segment " + str(b), [&]() -> Result<std::vector<float>> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        Result<torch::Tensor> x = b > 0 ? st.likeInput(*in, before, "a backward segment's residual") : Result<torch::Tensor>(in->x);
        Result<torch::Tensor> g = st.likeInput(*in, gradAfter, "a backward segment's gradient");
        if (!x || !g)
            return x ? g.error() : x.error();
        return floatsOf(st.model->blockBackward(b, *x, *g));
    });
}

Result<std::vector<float>> StageEngine::segmentWeightGradient(int b, std::span<const std::uint8_t> input,
                                                              std::span<const float> before,
                                                              std::span<const float> gradAfter,
                                                              std::span<const std::uint8_t> targets) {
    State& st = *m_state;
    return guarded("segment " + str(b) + "'s weights' gradient", [&]() -> Result<std::vector<float>> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        const bool head = b == blocks();
        Result<torch::Tensor> x = b > 0 ? st.likeInput(*in, before, "a segment's residual")
                                        : Result<torch::Tensor>(torch::Tensor());
        if (!x)
            return x.error();
        Result<torch::Tensor> second = head ? st.decodeTargets(targets, State::Shape{in->batch, in->seq})
                                            : st.likeInput(*in, gradAfter, "a segment's output gradient");
        if (!second)
            return second.error();
        return floatsOf(st.model->segmentWeightGradient(b, in->x, *x, *second));
    });
}

Result<std::vector<float>> StageEngine::headSegment(std::span<const std::uint8_t> input,
                                                    std::span<const std::uint8_t> targets,
                                                    std::span<const float> residual) {
    State& st = *m_state;
    return guarded("the head's backward", [&]() -> Result<std::vector<float>> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        Result<torch::Tensor> r = st.likeInput(*in, residual, "the head's residual");
        if (!r)
            return r.error();
        auto t = st.decodeTargets(targets, State::Shape{in->batch, in->seq});
        if (!t)
            return t.error();
        const auto [loss, grad] = st.model->headBackward(*r, *t);
        std::vector<float> out = floatsOf(grad);
        out.push_back(loss.item<float>());
        return out;
    });
}

Result<std::vector<float>> StageEngine::decodeGradientInput(std::span<const std::uint8_t> gradOutput,
                                                            std::span<const std::uint8_t> input) {
    State& st = *m_state;
    return guarded("decoding a gradient", [&]() -> Result<std::vector<float>> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        auto g = st.decodeGradient(gradOutput, State::Shape{in->batch, in->seq});
        if (!g)
            return g.error();
        return floatsOf(*g);
    });
}

Result<Bytes> StageEngine::encodeGradientOutput(std::span<const std::uint8_t> input,
                                                std::span<const float> grad) {
    State& st = *m_state;
    if (st.first())
        return makeError("stage 0 sends no gradient", ErrorKind::InvalidInput);
    return guarded("encoding a stage's gradient", [&]() -> Result<Bytes> {
        auto in = st.decodeInput(input);
        if (!in)
            return in.error();
        Result<torch::Tensor> g = st.likeInput(*in, grad, "a gradient");
        if (!g)
            return g.error();
        Bytes out;
        st.codec->encodeGradient(g->clone(), torch::Tensor(), out);
        return out;
    });
}

std::pair<std::int64_t, std::int64_t> StageEngine::segmentParameters(int b) const {
    const auto [firstBlock, lastBlock] = m_state->model->blockRange();
    const std::string prefix = "blocks." + str(firstBlock + b) + ".";
    const bool head = b == blocks(); // what follows the last block: the final norm and the head
    std::int64_t offset = 0, begin = -1, end = -1;
    for (const auto& [name, p] : m_state->model->namedParameters()) {
        const bool inBlock = name.rfind("blocks.", 0) == 0, inEmbedding = name.rfind("embedding.", 0) == 0;
        const bool mine =
            head ? !inBlock && !inEmbedding : name.rfind(prefix, 0) == 0 || (b == 0 && inEmbedding);
        if (mine && begin < 0)
            begin = offset;
        offset += p.numel();
        if (mine)
            end = offset;
    }
    (void)lastBlock;
    return begin < 0 ? std::pair<std::int64_t, std::int64_t>{0, 0} : std::pair{begin, end - begin};
}

int StageEngine::blocks() const {
    return m_state->model->blocks();
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

Result<std::vector<float>> StageEngine::weightsRange(std::int64_t offset, std::int64_t count) const {
    const State& st = *m_state;
    if (offset < 0 || count < 0 || offset > parameterCount() - count)
        return makeError("weights " + str(offset) + "+" + str(count) + " are not within the stage's " +
                             str(parameterCount()),
                         ErrorKind::InvalidInput);
    return guarded("reading weights", [&]() -> Result<std::vector<float>> {
        torch::NoGradGuard noGrad;
        std::vector<float> out;
        out.reserve(std::size_t(count));
        std::int64_t start = 0; // of the current parameter, in parameter order
        for (const torch::Tensor& w : st.aliases) {
            const std::int64_t numel = w.numel();
            const std::int64_t from = std::max(offset, start), to = std::min(offset + count, start + numel);
            if (from < to) {
                const torch::Tensor part = w.detach()
                                               .view({-1})
                                               .narrow(0, from - start, to - from)
                                               .to(torch::kCPU, torch::kFloat)
                                               .contiguous();
                out.insert(out.end(), part.data_ptr<float>(), part.data_ptr<float>() + part.numel());
            }
            start += numel;
        }
        return out;
    });
}

std::int64_t StageEngine::steps() const {
    return m_state->optimizer->steps();
}

void StageEngine::setOptimizerSteps(std::int64_t steps) {
    m_state->optimizer->setSteps(steps);
}

Result<WeightFingerprint> StageEngine::fingerprint(std::uint64_t seed) const {
    const State& st = *m_state;
    return guarded("fingerprinting the weights", [&]() -> Result<WeightFingerprint> {
        torch::NoGradGuard noGrad;
        WeightFingerprint f(seed);
        // The optimizer's weights (the checkpoint's), in parameter order, one parameter at a time.
        for (const torch::Tensor& w : st.optimizerWeights.empty() ? st.aliases : st.optimizerWeights) {
            const torch::Tensor values = w.detach().to(torch::kCPU, torch::kFloat).contiguous().view({-1});
            f.add(std::span<const float>(values.data_ptr<float>(), std::size_t(values.numel())));
        }
        return f;
    });
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
