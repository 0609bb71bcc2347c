// SPDX-License-Identifier: Apache-2.0
// The simulator's gradient exchange at each step, in its variants: the swarm's (GradientExchange,
// synchronous or landing a step late with look-ahead), each replica's AdamW step exchanged instead,
// and PowerSGD's two rounds.
#include "train/SwarmSimulatorState.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace tessera::gpu {

std::vector<torch::Tensor> parameterTensors(StageModel& model) {
    std::vector<torch::Tensor> out;
    for (auto& [name, tensor] : model.namedParameters())
        out.push_back(tensor);
    return out;
}

namespace {

// AdamW steps the optimizer's weights (exact copies while the model runs ahead of them, as the node's
// engine keeps them); then the model runs ahead by lookAhead times the update just made.
void landAhead(Replica& replica, const PendingUpdate& update, double lookAhead) {
    torch::NoGradGuard noGrad;
    auto params = replica.model->namedParameters();
    for (std::size_t i = 0; i < replica.optimizerWeights.size(); ++i)
        params[i].second.copy_(replica.optimizerWeights[i]);
    replica.optimizerWeights.clear();
    std::vector<torch::Tensor> before;
    if (lookAhead > 0)
        for (auto& [name, p] : params)
            before.push_back(p.detach().clone());
    (void)replica.optimizer->stepAgreed(update.learningRate, update.clipScale);
    if (lookAhead <= 0)
        return;
    for (std::size_t i = 0; i < params.size(); ++i) {
        replica.optimizerWeights.push_back(params[i].second.detach().clone());
        params[i].second.add_((replica.optimizerWeights[i] - before[i]).mul_(lookAhead));
    }
}

// exchangeUpdates: the replica's own AdamW step (moments of its own gradients, clipped on its own, at
// learning rate 1 and no decay) replaces its gradient sum: p.grad() = step × microbatches.
void localStep(Replica& replica) {
    torch::NoGradGuard noGrad;
    auto params = replica.model->namedParameters();
    for (std::size_t i = 0; i < params.size(); ++i)
        replica.stepScratch[i].mutable_grad() = params[i].second.grad().detach().clone();
    (void)replica.stepOptimizer->step(replica.microbatches, 1.0);
    for (std::size_t i = 0; i < params.size(); ++i) {
        params[i].second.mutable_grad().copy_(replica.stepScratch[i]).mul_(-replica.microbatches);
        replica.stepScratch[i].zero_();
    }
}

// The agreed step, in p.grad(): w ← w·(1 − lr·decay) − lr·step.
void applyAgreedStep(Replica& replica, double learningRate, double weightDecay) {
    torch::NoGradGuard noGrad;
    for (auto& [name, p] : replica.model->namedParameters()) {
        p.mul_(1.0 - learningRate * weightDecay).sub_(p.grad(), learningRate);
        p.mutable_grad().zero_();
    }
}

GradientCompressor& compressorOf(Replica& replica, bool dense) {
    return dense ? *replica.denseCompressor : *replica.compressor;
}

// The weighted mean of the replicas' shares, as the coordinator makes it.
template <typename ShareOf>
std::vector<float> weightedMean(std::vector<Replica>& stage, int total, std::int64_t size,
                                const ShareOf& shareOf) {
    std::vector<double> mean(static_cast<std::size_t>(size), 0.0);
    for (Replica& replica : stage) {
        if (replica.microbatches == 0)
            continue;
        const std::vector<float> share = shareOf(replica);
        for (std::size_t i = 0; i < share.size(); ++i)
            mean[i] += static_cast<double>(replica.microbatches) * share[i];
    }
    std::vector<float> out(mean.size());
    for (std::size_t i = 0; i < mean.size(); ++i)
        out[i] = static_cast<float>(mean[i] / total);
    return out;
}

// One stage's round: every replica shares what it collected, the combiner makes the result (empty
// where no replica processed a microbatch) and adds its squared norm to `squared`.
std::vector<float> combineStage(std::vector<Replica>& stage, GradientRoundCombiner& combiner, bool dense,
                                bool exchangeUpdates, double& squared) {
    int total = 0;
    for (Replica& replica : stage) {
        if (exchangeUpdates && replica.microbatches > 0)
            localStep(replica);
        compressorOf(replica, dense).collect();
        total += replica.microbatches;
    }
    if (total == 0)
        return {};
    const GradientLayout& layout = combiner.layout();
    // PowerSGD's first round (low rank only): the basis every replica projects on.
    std::vector<float> basis;
    if (layout.lowRank())
        basis = combiner.basis(weightedMean(stage, total, layout.basisSize(), [&](Replica& replica) {
            return compressorOf(replica, dense).basisShare(replica.microbatches);
        }));
    const std::vector<float> meanShare =
        weightedMean(stage, total, layout.shareSize(), [&](Replica& replica) {
            Result<std::vector<float>> share =
                compressorOf(replica, dense).share(replica.microbatches, basis);
            if (!share)
                throw std::runtime_error("gradient exchange: " + share.message());
            return std::move(share).value();
        });
    double norm = 0;
    std::vector<float> result = combiner.result(meanShare, &norm);
    squared += norm;
    return result;
}

// pipelineDelay steps late: this round's gradient waits; the oldest waiting lands, with the update
// its round agreed (the front of the stage's pending updates).
void landDelayed(Replica& replica, const PendingUpdate& now, const std::deque<PendingUpdate>& agreed,
                 const SimOptions& o) {
    std::vector<torch::Tensor> waiting;
    for (auto& [name, p] : replica.model->namedParameters())
        waiting.push_back(now.valid && p.grad().defined() ? p.grad().clone() : torch::Tensor());
    replica.pending.push_back(std::move(waiting));
    if (replica.pending.size() <= std::size_t(o.pipelineDelay)) {
        replica.model->zeroGrad();
        return;
    }
    const PendingUpdate& landing = agreed.front();
    if (landing.valid) {
        auto params = replica.model->namedParameters();
        for (std::size_t i = 0; i < params.size(); ++i)
            if (replica.pending.front()[i].defined())
                params[i].second.mutable_grad() = replica.pending.front()[i];
        landAhead(replica, landing, o.lookAhead);
    } else {
        replica.model->zeroGrad();
    }
    replica.pending.pop_front();
}

// What one step's exchange is, the same for every stage.
struct ExchangeRound {
    bool dense = false;        // a low-rank run's dense round: its dense compressors and combiners
    bool varianceMoves = true; // AdamW's second moment moves this step
};

// One replica takes its stage's round result into its gradients, then steps: the agreed update at
// once, or (pipelineDelay > 0) the one that lands this step.
void applyRound(SwarmSimulator::State& st, std::size_t s, Replica& replica, const std::vector<float>& result,
                const PendingUpdate& now, const ExchangeRound& round) {
    const SimOptions& o = st.options;
    const auto& combiners = round.dense ? st.denseCombiners : st.combiners;
    if (now.valid)
        if (auto applied = compressorOf(replica, round.dense)
                               .apply(result, replica.microbatches > 0, combiners[s]->round());
            !applied)
            throw std::runtime_error("gradient exchange: " + applied.message());
    replica.microbatches = 0;
    if (o.exchangeUpdates) {
        if (now.valid)
            applyAgreedStep(replica, now.learningRate, o.optimizer.weightDecay);
        return;
    }
    if (o.pipelineDelay == 0) {
        if (now.valid)
            (void)replica.optimizer->stepAgreed(now.learningRate, now.clipScale, round.varianceMoves);
        return;
    }
    landDelayed(replica, now, st.pending[s], o);
}

} // namespace

void exchangeGradients(SwarmSimulator::State& st) {
    std::vector<std::vector<float>> results(st.stages.size());
    double squared = 0;
    const SimOptions& o = st.options;
    ExchangeRound round;
    round.dense = !st.denseCombiners.empty() &&
                  (st.step <= o.denseSteps || (o.denseEvery > 0 && st.step % o.denseEvery == 0));
    auto& combiners = round.dense ? st.denseCombiners : st.combiners;
    // A low-rank run's variance moves on its dense rounds only, and on none after a freeze.
    round.varianceMoves = (round.dense || st.denseCombiners.empty()) &&
                          (o.freezeVarianceAfter == 0 || st.step <= o.freezeVarianceAfter);
    for (std::size_t s = 0; s < st.stages.size(); ++s)
        results[s] = combineStage(st.stages[s], *combiners[s], round.dense, o.exchangeUpdates, squared);
    const double norm = std::sqrt(squared);
    const double clip = st.options.optimizer.clipNorm;
    const double scale = clip > 0 && norm > clip ? clip / norm : 1.0;
    const double learningRate = st.options.schedule.at(st.step);
    for (std::size_t s = 0; s < st.stages.size(); ++s) {
        PendingUpdate now{!results[s].empty(), learningRate, scale};
        for (Replica& replica : st.stages[s])
            applyRound(st, s, replica, results[s], now, round);
        st.pending[s].push_back(now);
        if (st.pending[s].size() > std::size_t(st.options.pipelineDelay))
            st.pending[s].pop_front();
    }
}

} // namespace tessera::gpu
