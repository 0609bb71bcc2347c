// SPDX-License-Identifier: Apache-2.0
#pragma once
// EngineTask, EngineResult, EngineStats, EngineLoadOptions: what crosses between the node's
// session and its EngineWorker thread (plain values, registered as Qt metatypes).

#include "base/Result.h"
#include "base/ShardManifest.h"
#include "engine/StageEngine.h"

#include <QByteArray>
#include <QMetaType>
#include <QString>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::node {

struct EngineTask {
    enum Kind {
        Forward,  // input (+ targets on the last stage) → output activation frame, loss
        Backward, // gradOutput (+ input/targets when the forward ran elsewhere) → gradInput
        Step,     // AdamW over what was accumulated, averaged over `microbatches`
        Probe,    // synthetic forward + backward of batch×seq: how fast this stage runs here
        // The last stage: input + targets → loss, then backward through the graph just kept.
        ForwardBackward,
        Gather,     // partition of partitions (-1: all of them) → values
        ApplyDelta, // the delta rule on a partition: w += values − snapshot
        SetWeights, // a partition's (-1: every) weights = values
        // A ghost sync's chunk: weights [offset, offset + values) in parameter order = values.
        SetWeightsRange,
        // Gradient averaging: what was accumulated → this replica's share (on basis round `round`,
        // at `rank`; a low rank's first); a low rank's basis (values) → the second share; then the
        // round's result → the same AdamW step on every replica.
        ShareGradients,
        ShareOnBasis,
        ApplyGradients,
        // A share check's: input, gradOutput (targets on the last stage) → the count sketch of the
        // weights' gradient that microbatch gives (values), nothing accumulated (seed: the sketch's).
        GradientSketch,
        // A bisection's: input → the residual stream after each of the stage's blocks (values);
        // a backward's: those, the gradients with respect to them and to the input, and the loss.
        TraceForward,
        TraceBackward,
    };

    // Step over everything accumulated since the last step, however many microbatches that is.
    static constexpr int kAllAccumulated = -1;

    std::int64_t taskId = 0;
    Kind kind = Forward;
    std::int64_t microbatch = 0;
    // Forward, ForwardBackward: the step of a pipelined microbatch (-1: synchronous);
    // ShareGradients: the step whose gradients are shared.
    std::int64_t step = -1;
    // The frames below are views into `message` when they came in one (QByteArray::fromRawData:
    // the payloads are never copied out of the message), or own their bytes otherwise.
    QByteArray message;
    QByteArray input;       // stage 0: a token frame; else a codec activation frame
    QByteArray targets;     // last stage: a token frame of the input's shape
    QByteArray gradOutput;  // the next stage's codec gradient frame (ignored on the last stage)
    int microbatches = 0;   // Step (kAllAccumulated: however many accumulated)
    int batch = 0;          // Probe
    int seq = 0;            // Probe
    std::uint64_t seed = 0; // Probe; GradientSketch: the sketch's seed
    // Gather, ApplyDelta, SetWeights: partition (-1: all) of the SPARTA split into `partitions`.
    int partition = -1;
    int partitions = 0;
    std::vector<float> values;   // ApplyDelta: the average; SetWeights: the weights
    std::vector<float> snapshot; // ApplyDelta: what this node sent for the round
    std::int64_t offset = 0;     // SetWeightsRange: where values go, of `total` weights
    std::int64_t total = 0;
    std::int64_t optimizerSteps = -1; // SetWeightsRange: AdamW's step count the sync carries (-1: none)
    // ShareGradients: the basis round and rank; ApplyGradients: the result's round (values: the result).
    std::int64_t round = 0;
    int rank = 0;
    int bits = 32; // ShareGradients: what the share travels in (gpu/base/BlockQuant)
    bool included = false;
    double learningRate = 0;
    double clipScale = 1;
    double lookAhead = 0;
    bool optimizerWeights = false; // Gather: without the look-ahead
    std::uint64_t fingerprintSeed = 0; // ApplyGradients: fingerprint the weights after it (0: no)
};

// A frame the engine wrote, behind the headroom it left for the node's envelope (see
// StageEngineOptions::outputHeadroom): the node wraps the message around it where it lies.
struct EngineOutput {
    std::shared_ptr<gpu::Bytes> bytes; // shared: crossing threads copies a pointer, not the frame
    std::size_t at = 0;                // where the frame starts in bytes

    bool isEmpty() const { return !bytes || bytes->size() <= at; }
    QByteArrayView view() const {
        return isEmpty() ? QByteArrayView()
                         : QByteArrayView(reinterpret_cast<const char*>(bytes->data()) + at,
                                          qsizetype(bytes->size() - at));
    }
    QByteArray toByteArray() const { return view().toByteArray(); } // a copy
};

struct EngineResult {
    std::int64_t taskId = 0;
    EngineTask::Kind kind = EngineTask::Forward;
    std::int64_t microbatch = 0;
    bool ok = false;
    QString error;                           // what went wrong, when !ok
    ErrorKind errorKind = ErrorKind::Failed; // what the sender can do about it (MissingGraph: send the input)
    EngineOutput output;       // Forward: activation frame for the next stage (empty on the last)
    EngineOutput gradInput;    // Backward: gradient frame for the previous stage (empty on stage 0)
    int microbatches = 0;      // Step: accumulated microbatches whose gradients the step applied
    // Gather: the partition's weights (fp32); ShareGradients: the share; GradientSketch: the sketch
    std::vector<float> values;
    bool withheld = false;     // Misbehaviour (tests only): nothing of it is sent
    // Misbehaviour (tests only): a Gather's values before the lie (what its weights are; kept as SPARTA's
    // snapshot, so the lie is only in what is sent). Empty when nothing was changed.
    std::vector<float> honestValues;
    bool hasBasis = true;      // ShareGradients: false when it holds another round's basis
    std::int64_t basisRound = 0;
    bool firstRound = false; // ShareGradients: the values are a low rank's first share
    QString fingerprint;     // ApplyGradients with a seed: the weights' (WeightFingerprint::toText)
    double loss = std::numeric_limits<double>::quiet_NaN(); // last stage's forward/backward only
    qint64 tokens = 0;
    qint64 flop = 0; // what the coordinator credits for this task (0 when it failed)
    double computeSeconds = 0;
    // steady_clock time since its epoch, so a caller can line compute up with its own clock.
    qint64 startedNs = 0;
    qint64 finishedNs = 0;
};

struct EngineStats {
    double computeShareWindow = 0; // over the throttle's sliding window
    double computeShareTotal = 0;  // since the first task started
    qint64 tasksDone = 0;
    int queued = 0;
    bool paused = false;
    double limit = 1.0;
    double lastTaskSeconds = 0;
};

struct EngineLoadOptions {
    gpu::StageEngineOptions engine;
    // Empty: the stage's seeded initial weights. Otherwise verified against `manifest`.
    QString shardPath;
    std::optional<gpu::ShardManifest> manifest;
};

} // namespace tessera::node

Q_DECLARE_METATYPE(tessera::node::EngineTask)
Q_DECLARE_METATYPE(tessera::node::EngineResult)
Q_DECLARE_METATYPE(tessera::node::EngineStats)
Q_DECLARE_METATYPE(tessera::node::EngineLoadOptions)
