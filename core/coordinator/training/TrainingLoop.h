// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrainingLoop: the steps of training — feeds the router a microbatch of the run's data when the
// current step still needs one, counts a global batch of completions per step, then sends `step k`
// to every routed node, starts the step's averaging rounds and publishes checkpoints on their steps.
// It keeps the step's loss, the loss curve and the token rate, and writes everything through
// TrainingStore (flushed about once a second), so a restart resumes the step.

#include "coordinator/router/Router.h"
#include "coordinator/store/TrainingStore.h"
#include "coordinator/training/StepWindow.h"
#include "protocol/SessionMessages.h"

#include <QHash>
#include <QJsonObject>

#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>

namespace tessera::gpu {
class TrainingData;
}

namespace tessera::coordinator {

class Averager;
class GradientAverager;
class StageCheckpoints;

struct LoopSettings {
    int batch = 8;               // sequences per microbatch
    int seq = 64;                // tokens per sequence
    int microbatchesPerStep = 8; // the global batch
    int checkpointEvery = 50;    // steps between published checkpoints
    qint64 maxSteps = 0;         // stop issuing after this step (0: never)
    // 1: synchronous — a step's microbatches all start after the previous step's update lands, so
    // every gradient is computed with the weights it is applied to (the pipeline drains at every
    // step). 2: asynchronous (needs gradient averaging) — the microbatches of step k+1 start while
    // step k's finish and its update is exchanged; step k+2's wait for step k's update (a gradient
    // is at most one update stale, and each microbatch's forward and backward use the same weights).
    int pipelineDepth = 1;
};

class TrainingLoop final {
public:
    using SendText = std::function<bool(const QString& node, const protocol::SessionMessage& message)>;
    using Clock = std::function<qint64()>;

    TrainingLoop(LoopSettings settings, int stages, TrainingStore& store, TrainingState& state,
                 gpu::TrainingData& data, StageCheckpoints& checkpoints, Averager& averager,
                 SendText sendText, Clock clock);
    // The router it feeds (made after the loop: the router's feed is this loop).
    void attach(Router& router);
    // Called when a step's microbatches are all in, before `step` is sent (audits ask for weights then).
    void setBeforeStep(std::function<void()> hook) { m_beforeStep = std::move(hook); }
    // With gradient averaging: `step` asks for shares, and the weights change when the exchange
    // closes (exchangeClosed); the microbatches of step k + depth wait for step k's.
    void setGradients(GradientAverager* gradients) { m_gradients = gradients; }
    void exchangeClosed(qint64 step);

    std::optional<MicrobatchInput> feed();
    void onIssued(qint64 microbatch, qint64 tokens);
    void onCompleted(const Microbatch& mb);
    void onAbandoned(const Microbatch& mb);
    // Writes what is queued (joins and leaves between steps too).
    void flush();
    void publishCheckpoints();

    // step, loss, tokens, tokens_per_second, microbatches, credits_granted_flop, loss_curve, data_error
    // (why the data failed its last read; null while it reads).
    QJsonObject status() const;

private:
    // What a step's completed microbatches add up to while it has not ended: the backward tasks
    // accepted per node (a share's weight) and the loss.
    struct StepProgress {
        QHash<QString, int> work;
        double lossSum = 0;
        int lossCount = 0;
    };
    void endStep();

    LoopSettings m_settings;
    int m_stages;
    TrainingStore& m_store;
    TrainingState& m_state;
    gpu::TrainingData& m_data;
    StageCheckpoints& m_checkpoints;
    Averager& m_averager;
    GradientAverager* m_gradients = nullptr;
    SendText m_sendText;
    Clock m_clock;
    Router* m_router = nullptr;
    std::function<void()> m_beforeStep;
    qint64 m_savedJoins = 0, m_savedLeaves = 0;
    StepWindow m_window;                    // which step a microbatch goes to; when a step ends
    std::map<qint64, StepProgress> m_steps; // steps under way (after m_state.step)
    qint64 m_fedStep = 0;                   // the step of the microbatch the feed gave last
    // Why the training data failed its last read (a file changed since it was checked), in words;
    // empty while it reads. No microbatch is issued meanwhile; /v1/status shows it.
    QString m_dataError;
    double m_lastLoss = std::numeric_limits<double>::quiet_NaN();
    std::deque<std::pair<qint64, qint64>> m_recent; // (ms, tokens) of recent completions
    std::deque<LossPoint> m_lossCurve;
};

} // namespace tessera::coordinator
