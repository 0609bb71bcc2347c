// SPDX-License-Identifier: Apache-2.0
#include "train/SwarmSimulator.h"

#include "base/BlockQuant.h"
#include "train/SwarmSimulatorState.h"

#include <torch/torch.h>

#include <random>
#include <sstream>
#include <vector>

namespace tessera::gpu {

namespace {

// Refuses options the simulator cannot run, with what the range is.
Status checkOptions(const SimOptions& options) {
    if (auto valid = options.config.validate(); !valid)
        return valid.error();
    if (options.replicas < 1 || options.replicas > 64)
        return makeError("replicas must be between 1 and 64");
    if (options.gradientRank < 0 || options.gradientRank > 1024)
        return makeError("the gradient exchange's rank must be between 0 and 1024");
    if (!validQuantBits(options.gradientBits) || (options.gradientBits != 32 && options.gradientRank != 0))
        return makeError("the gradient exchange travels in 32 bits, or in 8 or 4 at rank 0");
    if (options.denseSteps < 0 || options.denseEvery < 0 || options.freezeVarianceAfter < 0 ||
        !validQuantBits(options.denseBits))
        return makeError("dense steps and the dense interval must be ≥ 0, dense bits 32, 8 or 4");
    if ((options.denseSteps > 0 || options.denseEvery > 0 || options.freezeVarianceAfter > 0) &&
        options.pipelineDelay > 0)
        return makeError("dense rounds in a low-rank run are simulated with the synchronous pipeline only");
    if (options.pipelineDelay < 0 || options.pipelineDelay > 3)
        return makeError("the pipeline's delay is 0 (synchronous) to 3 steps");
    if (options.exchangeUpdates &&
        (options.pipelineDelay > 0 || options.denseSteps > 0 || options.denseEvery > 0))
        return makeError("exchanged updates are simulated with the synchronous pipeline only");
    if (options.pipelineDelay > 0 && !options.gradientAveraging)
        return makeError("the asynchronous pipeline is simulated with gradient averaging only");
    if (options.lookAhead < 0 || options.lookAhead > 4)
        return makeError("the look-ahead must be between 0 and 4 updates");
    if (options.averagingInterval < 1 || options.partitions < 1)
        return makeError("the averaging interval and the number of partitions must be positive");
    if (options.microbatchesPerStep < 1 || options.batch < 1 || options.seqLen < 1 ||
        options.seqLen > options.config.maxSeqLen)
        return makeError("microbatches, batch and sequence length must be positive (and within max_seq_len)");
    return {};
}

// One replica of stage s: its model, optimizer, SPARTA and compressors (and what exchangeUpdates and
// dense rounds add).
Replica makeReplica(const SimOptions& options, const OptimizerOptions& optimizer, int s) {
    Replica replica;
    // Every replica of a stage starts from the same weights (the stage checkpoint).
    replica.model = std::make_unique<StageModel>(options.config, s);
    replica.optimizer = std::make_unique<StageOptimizer>(parameterTensors(*replica.model), optimizer);
    replica.sparta = std::make_unique<Sparta>(replica.model->namedParameters(), options.config.seed,
                                              options.partitions, options.averagingInterval);
    replica.compressor =
        std::make_unique<GradientCompressor>(parameterTensors(*replica.model), options.gradientRank,
                                             options.config.seed, options.memoryDecay, options.gradientBits);
    if (options.exchangeUpdates) {
        for (auto& [name, p] : replica.model->namedParameters())
            replica.stepScratch.push_back(torch::zeros_like(p).set_requires_grad(true));
        OptimizerOptions local = optimizer;
        local.weightDecay = 0; // decay is applied to the weights with the agreed step
        replica.stepOptimizer = std::make_unique<StageOptimizer>(replica.stepScratch, local);
    }
    if (options.gradientRank > 0 && (options.denseSteps > 0 || options.denseEvery > 0))
        replica.denseCompressor = std::make_unique<GradientCompressor>(
            parameterTensors(*replica.model), 0, options.config.seed, 1.0, options.denseBits);
    return replica;
}

// Every stage's replicas, and its combiners (made from its first replica's layout).
void buildStages(SwarmSimulator::State& state, const OptimizerOptions& optimizer) {
    const SimOptions& options = state.options;
    state.stages.resize(static_cast<std::size_t>(options.config.stages));
    for (int s = 0; s < options.config.stages; ++s)
        for (int r = 0; r < options.replicas; ++r) {
            Replica replica = makeReplica(options, optimizer, s);
            if (r == 0) {
                state.combiners.push_back(std::make_unique<GradientRoundCombiner>(
                    replica.compressor->layout(), options.config.seed, options.gradientBits));
                if (replica.denseCompressor)
                    state.denseCombiners.push_back(std::make_unique<GradientRoundCombiner>(
                        replica.denseCompressor->layout(), options.config.seed, options.denseBits));
            }
            state.stages[static_cast<std::size_t>(s)].push_back(std::move(replica));
        }
}

// Forward through every stage on the route, crossing every boundary as codec bytes; returns the
// last stage's loss.
double forwardMicrobatch(SwarmSimulator::State& st, std::int64_t id, const std::vector<int>& route,
                         const torch::Tensor& inputs, const torch::Tensor& targets, SimStep& result) {
    const int stageCount = static_cast<int>(st.stages.size());
    torch::Tensor carried = inputs;
    for (int s = 0; s < stageCount; ++s) {
        StageModel& model = *st.stages[s][route[s]].model;
        const bool last = s == stageCount - 1;
        torch::Tensor out = model.forwardKeep(id, carried, last ? targets : torch::Tensor());
        if (last)
            return out.item<double>();
        const auto bytes = st.codec->encodeActivation(out, inputs);
        result.wireBytes += static_cast<std::int64_t>(bytes.size());
        auto decoded = st.codec->decodeActivation(bytes);
        if (!decoded)
            throw std::runtime_error("codec: " + decoded.message());
        carried = decoded->hidden;
    }
    return 0;
}

// Backward in reverse, gradients through the codec too.
void backwardMicrobatch(SwarmSimulator::State& st, std::int64_t id, const std::vector<int>& route,
                        const torch::Tensor& inputs, SimStep& result) {
    const int stageCount = static_cast<int>(st.stages.size());
    torch::Tensor grad;
    for (int s = stageCount - 1; s >= 0; --s) {
        Replica& replica = st.stages[s][route[s]];
        auto back = replica.model->backward(id, grad);
        ++replica.microbatches;
        if (s == 0)
            break;
        const auto bytes = st.codec->encodeGradient(back.gradInput, inputs);
        result.wireBytes += static_cast<std::int64_t>(bytes.size());
        auto decoded = st.codec->decodeGradient(bytes);
        if (!decoded)
            throw std::runtime_error("codec: " + decoded.message());
        grad = *decoded;
    }
}

// One microbatch on a route drawn per stage, forward and back; returns its loss.
double runMicrobatch(SwarmSimulator::State& st, SimStep& result) {
    const int stageCount = static_cast<int>(st.stages.size());
    const int replicas = st.options.replicas;
    const std::int64_t id = st.nextMicrobatch++;
    const torch::Tensor batch = st.data->nextBatch(st.options.batch, st.options.seqLen);
    const torch::Tensor inputs = batch.narrow(1, 0, st.options.seqLen).contiguous();
    const torch::Tensor targets = batch.narrow(1, 1, st.options.seqLen).contiguous();
    std::vector<int> route(static_cast<std::size_t>(stageCount));
    for (auto& r : route)
        r = static_cast<int>(st.routing() % static_cast<std::uint64_t>(replicas));
    const double loss = forwardMicrobatch(st, id, route, inputs, targets, result);
    backwardMicrobatch(st, id, route, inputs, result);
    st.tokens += inputs.numel();
    return loss;
}

// Every 20 steps, SPARTA.
void averageSparta(SwarmSimulator::State& st, SimStep& result) {
    if (!(st.options.sparseAveraging && st.options.replicas > 1 &&
          st.stages[0][0].sparta->isAveragingStep(st.step)))
        return;
    for (auto& stage : st.stages) {
        const int p = stage[0].sparta->partitionForStep(st.step);
        std::vector<torch::Tensor> snapshots;
        for (auto& replica : stage)
            snapshots.push_back(replica.sparta->gather(p));
        const torch::Tensor average = torch::stack(snapshots).mean(0);
        for (std::size_t r = 0; r < stage.size(); ++r)
            stage[r].sparta->applyDelta(p, average, snapshots[r]);
        ++result.averagedStages;
    }
}

} // namespace

SwarmSimulator::SwarmSimulator(std::unique_ptr<State> state)
    : m_state(std::move(state)) {}

SwarmSimulator::~SwarmSimulator() = default;

Result<std::unique_ptr<SwarmSimulator>> SwarmSimulator::create(const SimOptions& options) {
    if (Status valid = checkOptions(options); !valid)
        return valid.error();
    auto data = DataSource::open(options.data, options.config.vocabSize, options.seed);
    if (!data)
        return data.error();

    auto state = std::make_unique<State>();
    state->options = options;
    state->data = std::move(*data);
    auto codec = makeCodec(options.config);
    if (!codec)
        return codec.error();
    state->codec = std::move(*codec);
    state->routing.seed(options.routingSeed != 0 ? options.routingSeed : options.seed ^ 0x70u);
    state->pending.resize(static_cast<std::size_t>(options.config.stages));
    OptimizerOptions optimizer = options.optimizer;
    optimizer.momentBits = options.config.momentBits; // the run's, as on a real swarm
    try {
        buildStages(*state, optimizer);
    } catch (const std::exception& e) {
        return makeError(std::string("could not build the model: ") + e.what());
    }
    for (int i = 0; i < options.evalBatches; ++i)
        state->heldOut.push_back(state->data->nextBatch(options.batch, options.seqLen, 1));
    return std::unique_ptr<SwarmSimulator>(new SwarmSimulator(std::move(state)));
}

SimStep SwarmSimulator::step() {
    State& st = *m_state;
    SimStep result;
    double lossSum = 0;
    for (int m = 0; m < st.options.microbatchesPerStep; ++m)
        lossSum += runMicrobatch(st, result);

    ++st.step;
    if (st.options.gradientAveraging) {
        exchangeGradients(st);
    } else {
        // Every replica steps on what it accumulated (clipped on its own).
        const double learningRate = st.options.schedule.at(st.step);
        for (auto& stage : st.stages)
            for (auto& replica : stage) {
                (void)replica.optimizer->step(replica.microbatches, learningRate);
                replica.microbatches = 0;
            }
    }
    averageSparta(st, result);
    result.step = st.step;
    result.tokens = st.tokens;
    result.trainLoss = lossSum / st.options.microbatchesPerStep;
    return result;
}

double SwarmSimulator::evaluate() {
    State& st = *m_state;
    // What is evaluated is the optimizer's weights (the look-ahead is a training device): they trade
    // places with the running weights of replica 0, and back after.
    const auto swapWithOptimizers = [&] {
        torch::NoGradGuard noGrad;
        for (auto& stage : st.stages) {
            auto params = stage[0].model->namedParameters();
            for (std::size_t i = 0; i < stage[0].optimizerWeights.size(); ++i) {
                torch::Tensor running = params[i].second.detach().clone();
                params[i].second.copy_(stage[0].optimizerWeights[i]);
                stage[0].optimizerWeights[i] = running;
            }
        }
    };
    swapWithOptimizers();
    double sum = 0;
    for (const torch::Tensor& batch : st.heldOut) {
        const torch::Tensor inputs = batch.narrow(1, 0, st.options.seqLen).contiguous();
        const torch::Tensor targets = batch.narrow(1, 1, st.options.seqLen).contiguous();
        torch::Tensor carried = inputs;
        for (std::size_t s = 0; s < st.stages.size(); ++s) {
            const bool last = s + 1 == st.stages.size();
            torch::Tensor out = st.stages[s][0].model->forward(carried, last ? targets : torch::Tensor());
            if (last) {
                sum += out.item<double>();
                break;
            }
            auto decoded = st.codec->decodeActivation(st.codec->encodeActivation(out, inputs));
            carried = decoded->hidden;
        }
    }
    swapWithOptimizers();
    return sum / static_cast<double>(st.heldOut.size());
}

std::int64_t SwarmSimulator::shareValues(int stage) const {
    const GradientLayout& layout = m_state->combiners.at(static_cast<std::size_t>(stage))->layout();
    return layout.basisSize() + layout.shareSize(); // both rounds
}

std::int64_t SwarmSimulator::gradientValues(int stage) const {
    return m_state->combiners.at(static_cast<std::size_t>(stage))->layout().gradientSize();
}

double SwarmSimulator::replicaSpread() const {
    double worst = 0;
    for (const auto& stage : m_state->stages) {
        auto first = stage[0].model->namedParameters();
        for (std::size_t r = 1; r < stage.size(); ++r) {
            auto other = stage[r].model->namedParameters();
            double diff = 0, norm = 0;
            for (std::size_t i = 0; i < first.size(); ++i) {
                diff += (first[i].second - other[i].second).to(torch::kDouble).pow(2).sum().item<double>();
                norm += first[i].second.to(torch::kDouble).pow(2).sum().item<double>();
            }
            worst = std::max(worst, norm > 0 ? std::sqrt(diff / norm) : 0.0);
        }
    }
    return worst;
}

double SwarmSimulator::entropyFloor() const {
    return m_state->data->entropyFloor();
}

std::string SwarmSimulator::describe() const {
    const SimOptions& o = m_state->options;
    std::ostringstream out;
    out << o.config.name << " (" << o.config.parameterCount() << " parameters), " << o.config.stages
        << " stage(s) x " << o.replicas << " replica(s), codec " << codecName(o.config.codec);
    if (o.config.codec == CodecKind::Subspace)
        out << " (k=" << o.config.subspaceDim() << ", ratio " << o.config.subspaceRatio << ")";
    out << "; " << o.microbatchesPerStep << " microbatches x " << o.batch << " x " << o.seqLen
        << " tokens per step; ";
    if (o.gradientAveraging) {
        out << "gradients averaged every step ("
            << (o.gradientRank         ? "rank " + std::to_string(o.gradientRank)
                : o.gradientBits != 32 ? "dense " + std::to_string(o.gradientBits) + "-bit"
                                       : std::string("dense fp32"))
            << ", " << shareValues(0) << " of " << gradientValues(0) << " values sent by stage 0), clip "
            << o.optimizer.clipNorm << ", lr " << o.schedule.peak << " warm-up " << o.schedule.warmupSteps
            << " decay " << o.schedule.decayName();
        if (o.schedule.decay != LearningRateSchedule::Decay::None)
            out << " to " << o.schedule.minRatio << "x at step " << o.schedule.decaySteps;
        if (!m_state->denseCombiners.empty())
            out << ", dense " << o.denseBits << "-bit for the first " << o.denseSteps << " steps"
                << (o.denseEvery > 0 ? " and every " + std::to_string(o.denseEvery) + "th" : std::string());
        if (!m_state->denseCombiners.empty())
            out << ", AdamW's second moment held on low-rank rounds";
        if (o.freezeVarianceAfter > 0)
            out << ", AdamW's second moment held after step " << o.freezeVarianceAfter;
        if (o.pipelineDelay > 0)
            out << ", asynchronous pipeline (updates land " << o.pipelineDelay << " step late"
                << (o.lookAhead > 0 ? ", look-ahead " + std::to_string(o.lookAhead) : std::string()) << ")";
        out << "; ";
    }
    if (o.replicas > 1)
        out << (o.sparseAveraging ? "SPARTA 1/" + std::to_string(o.partitions) + " of the weights every " +
                                        std::to_string(o.averagingInterval) + " steps; "
                                  : std::string("no averaging; "));
    out << "data: " << m_state->data->description();
    return out.str();
}

} // namespace tessera::gpu
