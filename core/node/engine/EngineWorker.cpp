// SPDX-License-Identifier: Apache-2.0
// EngineWorker: the queue, the throttle's rest timer, soft pause, and tasks run through gpu/.
#include "node/engine/EngineWorker.h"

#include "engine/Misbehaviour.h"
#include "engine/StageEngine.h"

#include <QFile>
#include <QMetaObject>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <span>
#include <utility>

namespace tessera::node {

namespace {

using Clock = ComputeThrottle::Clock;

// Probes never collide with the coordinator's microbatch ids (which are ≥ 0).
constexpr std::int64_t kProbeMicrobatch = std::numeric_limits<std::int64_t>::min();

std::span<const std::uint8_t> bytes(const QByteArray& a) {
    return {reinterpret_cast<const std::uint8_t*>(a.constData()), std::size_t(a.size())};
}

// The engine's output frame, moved (not copied) behind a shared pointer.
EngineOutput outputOf(gpu::Bytes&& bytes, std::size_t headroom) {
    if (bytes.size() <= headroom)
        return {};
    return {std::make_shared<gpu::Bytes>(std::move(bytes)), headroom};
}

qint64 sinceEpochNs(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

QString text(const std::string& s) {
    return QString::fromStdString(s);
}

// A task that failed: what it was doing, and the engine's reason and error kind. Returns false
// (not ok), for a handler to return.
template <typename R>
bool failed(EngineResult& r, const QString& what, const R& result) {
    r.error = what + QStringLiteral(": ") + text(result.message());
    r.errorKind = result.kind();
    return false;
}

} // namespace

EngineWorker::EngineWorker(Mailbox* replies, QObject* parent)
    : QObject(parent)
    , m_replies(replies)
    , m_inbox(this)
    , m_restTimer(this)
    , m_statsTimer(this) {
    qRegisterMetaType<EngineTask>();
    qRegisterMetaType<EngineResult>();
    qRegisterMetaType<EngineStats>();
    qRegisterMetaType<EngineLoadOptions>();
    m_restTimer.setSingleShot(true);
    // A coarse timer may fire up to 5% late: that would be compute share lost at low limits.
    m_restTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_restTimer, &QTimer::timeout, this, &EngineWorker::runNext);
    m_statsTimer.setInterval(std::chrono::seconds(1));
    connect(&m_statsTimer, &QTimer::timeout, this, [this] {
        if (m_engine)
            emitStats();
    });
}

EngineWorker::~EngineWorker() = default;

void EngineWorker::load(const EngineLoadOptions& options) {
    m_inbox.post([this, options] { doLoad(options); });
}

void EngineWorker::submit(const EngineTask& task) {
    m_inbox.post([this, task] { doSubmit(task); });
}

void EngineWorker::discardQueuedWork() {
    m_inbox.post([this] { doDiscardQueuedWork(); });
}

void EngineWorker::setPaused(bool paused) {
    // Stored here, on the caller's thread, so a task about to start sees it without the event loop.
    m_pauseRequested.store(paused);
    m_inbox.post([this] { applyPause(); });
}

void EngineWorker::setLimit(double limit) {
    m_inbox.post([this, limit] { doSetLimit(limit); });
}

void EngineWorker::stop() {
    m_stopRequested.store(true);
    m_inbox.post([this] { doStop(); });
}

void EngineWorker::doLoad(const EngineLoadOptions& options) {
    if (m_stopRequested.load()) {
        reply([this] { Q_EMIT loaded(QStringLiteral("the engine is stopped"), 0); });
        return;
    }
    m_engine.reset(); // the old stage's memory goes before the new one is allocated
    const auto fail = [this](const QString& error) {
        // What was queued for the old stage cannot run on none: each gets its answer.
        for (const EngineTask& task : m_queue.takeAll())
            refuse(task, QStringLiteral("no stage is loaded: %1").arg(error));
        reply([this, error] { Q_EMIT loaded(error, 0); });
        emitStats();
    };
    Result<std::unique_ptr<gpu::StageEngine>> engine = gpu::StageEngine::create(options.engine);
    if (!engine)
        return fail(text(engine.message()));
    if (!options.shardPath.isEmpty()) {
        if (!options.manifest)
            return fail(
                QStringLiteral("shard %1 has no manifest to verify it against").arg(options.shardPath));
        const Status status = (*engine)->loadShard(options.shardPath.toStdString(), *options.manifest);
        if (!status)
            return fail(text(status.message()));
    }
    Result<std::unique_ptr<gpu::Misbehaviour>> lie = gpu::Misbehaviour::create(
        options.engine.config, qEnvironmentVariable("TESSERA_TEST_MISBEHAVE").toStdString());
    if (!lie)
        return fail(text(lie.message()));
    m_misbehaviour = std::move(*lie);
    if (m_misbehaviour)
        qWarning("engine: TESSERA_TEST_MISBEHAVE is set: this node lies in its results (a test of the "
                 "coordinator)");
    m_lieFromFile = qEnvironmentVariable("TESSERA_TEST_MISBEHAVE_FROM_FILE");
    if (m_misbehaviour && !m_lieFromFile.isEmpty())
        m_laterLie = std::move(m_misbehaviour);
    m_engine = std::move(engine).value();
    m_headroom = options.engine.outputHeadroom;
    m_statsTimer.start();
    reply([this, parameters = qint64(m_engine->parameterCount())] { Q_EMIT loaded(QString(), parameters); });
    emitStats();
    schedule();
}

void EngineWorker::refuse(const EngineTask& task, const QString& reason) {
    EngineResult refused;
    refused.taskId = task.taskId;
    refused.kind = task.kind;
    refused.microbatch = task.microbatch;
    refused.error = reason;
    reply([this, refused = std::move(refused)] { Q_EMIT taskFinished(refused); });
}

void EngineWorker::doSubmit(const EngineTask& task) {
    if (m_stopRequested.load())
        return refuse(task, QStringLiteral("the engine is stopped"));
    // Loading runs on this thread: a load requested before this task has already ended.
    if (!m_engine)
        return refuse(task, QStringLiteral("no stage is loaded"));
    // Bounded in tasks and bytes: a coordinator that sends faster than this node computes cannot
    // fill its memory.
    if (const QString full = m_queue.push(task); !full.isEmpty())
        return refuse(task, full);
    schedule();
}

void EngineWorker::applyPause() {
    const bool paused = m_pauseRequested.load();
    if (paused != m_pausedReported) {
        m_pausedReported = paused;
        if (paused)
            m_restTimer.stop();
        reply([this, paused] { Q_EMIT pausedChanged(paused); });
        emitStats();
    }
    schedule();
}

void EngineWorker::doSetLimit(double limit) {
    m_throttle.setLimit(limit);
    m_restTimer.stop(); // the rest pending was sized with the old limit
    emitStats();
    schedule();
}

void EngineWorker::doDiscardQueuedWork() {
    // Posted after every submit the caller made before it, so all of those are in the queue now.
    m_queue.eraseIf([](const EngineTask& task) { return task.kind != EngineTask::Probe; });
    emitStats();
}

void EngineWorker::doStop() {
    m_statsTimer.stop();
    m_restTimer.stop();
    m_queue.clear();
    m_engine.reset();
    emitStats();
    reply([this] { Q_EMIT stopped(); });
}

void EngineWorker::schedule() {
    if (m_stopRequested.load() || m_pauseRequested.load() || !m_engine || m_queue.empty() || m_runQueued)
        return;
    const std::chrono::nanoseconds rest = m_throttle.restBefore(Clock::now());
    if (rest > std::chrono::nanoseconds(0)) {
        // Rounded up: a timer that fires before the rest is over would only be re-armed.
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(rest);
        m_restTimer.start(
            int(std::min<std::chrono::milliseconds::rep>(ms.count(), std::numeric_limits<int>::max())));
        return;
    }
    m_restTimer.stop();
    // Posted, not called: requests that arrived meanwhile (pause, stop, limit) go first.
    m_runQueued = true;
    QMetaObject::invokeMethod(this, &EngineWorker::runNext, Qt::QueuedConnection);
}

void EngineWorker::runNext() {
    m_runQueued = false;
    // The last look before compute starts: a pause requested a moment ago holds here.
    if (m_stopRequested.load() || m_pauseRequested.load() || !m_engine || m_queue.empty()) {
        if (m_pauseRequested.load())
            applyPause();
        return;
    }
    if (m_throttle.restBefore(Clock::now()) > std::chrono::nanoseconds(0)) {
        schedule();
        return;
    }
    const EngineTask task = *m_queue.take();

    if (m_laterLie && QFile::exists(m_lieFromFile)) { // every task begun from now on lies
        qWarning("engine: misbehaving from now on (%s exists)", qPrintable(m_lieFromFile));
        m_misbehaviour = std::move(m_laterLie);
    }
    const Clock::time_point start = Clock::now();
    EngineResult result = execute(task);
    const Clock::time_point end = Clock::now();
    m_throttle.recordCompute(start, end);
    result.startedNs = sinceEpochNs(start);
    result.finishedNs = sinceEpochNs(end);
    result.computeSeconds = std::chrono::duration<double>(end - start).count();
    m_lastTaskSeconds = result.computeSeconds;
    if (m_misbehaviour && result.ok)
        misbehave(task, result);
    ++m_tasksDone;

    reply([this, result = std::move(result)] { Q_EMIT taskFinished(result); });
    // Compute has stopped now: a pause that came in during the task is reported at once rather
    // than after whatever else is queued on this thread.
    if (m_pauseRequested.load() && !m_pausedReported)
        applyPause();
    else
        emitStats();
    schedule();
}

void EngineWorker::misbehave(const EngineTask& task, EngineResult& result) const {
    const gpu::Misbehaviour& lie = *m_misbehaviour;
    const auto frame = [](EngineOutput& o) {
        return std::span<std::uint8_t>(o.bytes->data() + o.at, o.bytes->size() - o.at);
    };
    const auto given = [](const QByteArray& b) {
        return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(b.constData()),
                                             std::size_t(b.size()));
    };
    if (!result.output.isEmpty())
        lie.activation(frame(result.output), m_engine->stage() > 0 ? given(task.input) : given({}));
    if (!result.gradInput.isEmpty())
        lie.gradient(frame(result.gradInput),
                     task.kind == EngineTask::Backward ? given(task.gradOutput) : given({}));
    if (task.kind == EngineTask::ForwardBackward)
        lie.loss(result.loss);
    // A liar keeps its own weights whole: it lies only in what it sends (SPARTA's snapshot stays true).
    if (task.kind == EngineTask::Gather)
        result.honestValues = result.values;
    if (task.kind == EngineTask::Gather)
        lie.share(result.values);
    if (task.kind == EngineTask::ShareGradients || task.kind == EngineTask::ShareOnBasis)
        lie.gradientShare(result.values);
    if (task.kind == EngineTask::Gather)
        lie.weights(result.values);
    if (result.honestValues == result.values)
        result.honestValues.clear(); // nothing was changed
    if (task.kind == EngineTask::Gather && task.partition == -1 && lie.withholdsSnapshots())
        result.withheld = true;
    if (lie.fastTiming())
        result.computeSeconds = 1e-9;
}

EngineResult EngineWorker::execute(const EngineTask& task) {
    EngineResult r;
    r.taskId = task.taskId;
    r.kind = task.kind;
    r.microbatch = task.microbatch;
    if (!m_engine) {
        r.error = QStringLiteral("no stage is loaded");
        return r;
    }
    // StageEngine catches its own exceptions; this is the last line so the thread never dies.
    // Each handler fills r and says whether the task succeeded; no default: a new kind must have one.
    try {
        switch (task.kind) {
        case EngineTask::Forward:
            r.ok = runForward(task, r);
            return r;
        case EngineTask::Backward:
            r.ok = runBackward(task, r);
            return r;
        case EngineTask::Step:
            r.ok = runStep(task, r);
            return r;
        case EngineTask::ForwardBackward:
            r.ok = runForwardBackward(task, r);
            return r;
        case EngineTask::Gather:
            r.ok = runGather(task, r);
            return r;
        case EngineTask::ApplyDelta:
            r.ok = runApplyDelta(task, r);
            return r;
        case EngineTask::ShareGradients:
            r.ok = runShareGradients(task, r);
            return r;
        case EngineTask::ShareOnBasis:
            r.ok = runShareOnBasis(task, r);
            return r;
        case EngineTask::ApplyGradients:
            r.ok = runApplyGradients(task, r);
            return r;
        case EngineTask::SetWeights:
            r.ok = runSetWeights(task, r);
            return r;
        case EngineTask::SetWeightsRange:
            r.ok = runSetWeightsRange(task, r);
            return r;
        case EngineTask::Probe:
            r.ok = runProbe(task, r);
            return r;
        case EngineTask::GradientSketch:
            r.ok = runGradientSketch(task, r);
            return r;
        case EngineTask::TraceForward:
            r.ok = runTraceForward(task, r);
            return r;
        case EngineTask::TraceBackward:
            r.ok = runTraceBackward(task, r);
            return r;
        }
    } catch (const std::exception& e) {
        r.error = QStringLiteral("engine: %1").arg(QString::fromLocal8Bit(e.what()));
        r.output = {};
        r.gradInput = {};
        r.values.clear();
        return r;
    }
    // A value outside the enum (a task built by casting an integer).
    r.error = QStringLiteral("unknown task kind %1").arg(int(task.kind));
    return r;
}

bool EngineWorker::runForward(const EngineTask& task, EngineResult& r) {
    gpu::StageEngine& engine = *m_engine;
    auto f = engine.forward(task.microbatch, bytes(task.input), bytes(task.targets), task.step);
    if (!f) {
        r.error = QStringLiteral("forward of microbatch %1: %2").arg(task.microbatch).arg(text(f.message()));
        return false;
    }
    r.output = outputOf(std::move(f->output), m_headroom);
    r.loss = f->loss;
    r.tokens = f->tokens;
    r.flop = gpu::StageEngine::forwardFlop(engine.parameterCount(), f->tokens);
    return true;
}

std::optional<bool> EngineWorker::lieInBackward(const EngineTask& task, EngineResult& r) {
    if (!m_misbehaviour)
        return std::nullopt;
    if (m_misbehaviour->claimsMissingGraphs()) {
        if (!task.input.isEmpty()) {
            m_claimedGraphs.erase(task.microbatch); // resent with its input: computed (its graph is kept)
            return std::nullopt;
        }
        if (!m_claimedGraphs.insert(task.microbatch).second)
            return std::nullopt;
        qWarning("engine: misbehaving: says it lost the graph of microbatch %lld", qlonglong(task.microbatch));
        r.error = QStringLiteral("backward of microbatch %1: its forward's graph is not held here").arg(task.microbatch);
        r.errorKind = ErrorKind::MissingGraph;
        return false;
    }
    if (m_misbehaviour->skipsFirstStageBackwards() && m_engine->stage() == 0) {
        m_engine->drop(task.microbatch); // its graph, never run backward
        ++m_skippedBackwards;
        return true;
    }
    return std::nullopt;
}

bool EngineWorker::runBackward(const EngineTask& task, EngineResult& r) {
    gpu::StageEngine& engine = *m_engine;
    if (const std::optional<bool> lied = lieInBackward(task, r))
        return *lied;
    auto b = engine.backward(task.microbatch, bytes(task.gradOutput), bytes(task.input), bytes(task.targets));
    // ErrorKind::MissingGraph: the graph is not held here (it ran elsewhere, or a step
    // ended it); the sender fixes that by sending the forward's input.
    if (!b)
        return failed(r, QStringLiteral("backward of microbatch %1").arg(task.microbatch), b);
    r.gradInput = outputOf(std::move(b->gradInput), m_headroom);
    r.loss = b->loss;
    r.tokens = b->tokens;
    r.flop = gpu::StageEngine::backwardFlop(engine.parameterCount(), b->tokens);
    return true;
}

bool EngineWorker::runGradientSketch(const EngineTask& task, EngineResult& r) {
    gpu::StageEngine& engine = *m_engine;
    auto sketch = engine.gradientSketch(bytes(task.gradOutput), bytes(task.input), bytes(task.targets), task.seed);
    if (!sketch)
        return failed(r, QStringLiteral("gradient sketch of microbatch %1").arg(task.microbatch), sketch);
    r.values = std::move(*sketch);
    return true;
}

bool EngineWorker::runTraceForward(const EngineTask& task, EngineResult& r) {
    auto trace = m_engine->traceForward(bytes(task.input));
    if (!trace)
        return failed(r, QStringLiteral("trace of microbatch %1").arg(task.microbatch), trace);
    r.values = std::move(*trace);
    return true;
}

bool EngineWorker::runTraceBackward(const EngineTask& task, EngineResult& r) {
    auto trace = m_engine->traceBackward(bytes(task.gradOutput), bytes(task.input), bytes(task.targets));
    if (!trace)
        return failed(r, QStringLiteral("trace of microbatch %1's backward").arg(task.microbatch), trace);
    r.values = std::move(*trace);
    return true;
}

bool EngineWorker::runStep(const EngineTask& task, EngineResult& r) {
    gpu::StageEngine& engine = *m_engine;
    const std::int64_t accumulated = engine.accumulatedMicrobatches();
    const int over = task.microbatches == EngineTask::kAllAccumulated
                         ? int(std::min<std::int64_t>(accumulated, std::numeric_limits<int>::max()))
                         : task.microbatches;
    const Status s = engine.step(over);
    if (!s) {
        r.error = QStringLiteral("optimizer step over %1 microbatches: %2").arg(over).arg(text(s.message()));
        return false;
    }
    r.microbatches = over > 0 ? int(std::min<std::int64_t>(accumulated, std::numeric_limits<int>::max())) : 0;
    return true;
}

bool EngineWorker::runForwardBackward(const EngineTask& task, EngineResult& r) {
    gpu::StageEngine& engine = *m_engine;
    if (engine.stage() != engine.config().stages - 1) {
        r.error = QStringLiteral("forward_backward runs on the last stage only; this is stage %1 of %2")
                      .arg(engine.stage())
                      .arg(engine.config().stages);
        return false;
    }
    auto f = engine.forward(task.microbatch, bytes(task.input), bytes(task.targets), task.step);
    if (!f) {
        r.error = QStringLiteral("forward of microbatch %1: %2").arg(task.microbatch).arg(text(f.message()));
        return false;
    }
    // Through the graph the forward kept; the input is there for an engine that keeps none.
    auto b = engine.backward(task.microbatch, {}, bytes(task.input), bytes(task.targets));
    if (!b) {
        engine.drop(task.microbatch);
        r.error = QStringLiteral("backward of microbatch %1: %2").arg(task.microbatch).arg(text(b.message()));
        return false;
    }
    r.gradInput = outputOf(std::move(b->gradInput), m_headroom);
    r.loss = f->loss;
    r.tokens = f->tokens;
    const std::int64_t n = engine.parameterCount();
    r.flop = gpu::StageEngine::forwardFlop(n, f->tokens) + gpu::StageEngine::backwardFlop(n, f->tokens);
    return true;
}

bool EngineWorker::runGather(const EngineTask& task, EngineResult& r) {
    Result<std::vector<float>> values =
        m_engine->gatherPartition(task.partition, task.partitions, task.optimizerWeights);
    if (!values) {
        r.error = QStringLiteral("gathering partition %1 of %2: %3")
                      .arg(task.partition)
                      .arg(task.partitions)
                      .arg(text(values.message()));
        return false;
    }
    r.values = std::move(values).value();
    return true;
}

bool EngineWorker::runApplyDelta(const EngineTask& task, EngineResult& r) {
    const Status s =
        m_engine->applyPartitionDelta(task.partition, task.partitions, task.values, task.snapshot);
    if (!s) {
        r.error = QStringLiteral("averaging partition %1 of %2: %3")
                      .arg(task.partition)
                      .arg(task.partitions)
                      .arg(text(s.message()));
        return false;
    }
    return true;
}

bool EngineWorker::runShareGradients(const EngineTask& task, EngineResult& r) {
    Result<gpu::GradientShare> share = m_engine->shareGradients(task.rank, task.round, task.step, task.bits);
    if (!share)
        return failed(r, QStringLiteral("sharing the gradients"), share);
    r.microbatches = share->microbatches;
    r.hasBasis = share->hasBasis;
    r.basisRound = share->basisRound;
    r.firstRound = share->firstRound;
    r.values = std::move(share->values);
    if (const std::int64_t skipped = std::exchange(m_skippedBackwards, 0); skipped > 0 && task.rank == 0) {
        // A lazy liar (tests only): the backwards it skipped counted in, zeros where nothing was added.
        r.microbatches += int(skipped);
        if (r.values.empty())
            r.values.assign(std::size_t(m_engine->parameterCount()), 0.0f);
    }
    return true;
}

bool EngineWorker::runShareOnBasis(const EngineTask& task, EngineResult& r) {
    Result<std::vector<float>> values = m_engine->shareOnBasis(task.rank, task.values);
    if (!values)
        return failed(r, QStringLiteral("sharing the gradients on round %1's basis").arg(task.round), values);
    r.values = std::move(values).value();
    r.basisRound = task.round;
    return true;
}

bool EngineWorker::runApplyGradients(const EngineTask& task, EngineResult& r) {
    // A stale liar (tests only) says it applied the update and keeps its weights as they were.
    if (!m_misbehaviour || !m_misbehaviour->skipsUpdates()) {
        const Status s = m_engine->applyGradients(task.rank, task.values, task.included, task.round,
                                                  task.learningRate, task.clipScale, task.lookAhead);
        if (!s)
            return failed(r, QStringLiteral("applying the averaged gradients of round %1").arg(task.round),
                          s);
    }
    if (task.fingerprintSeed != 0) {
        Result<gpu::WeightFingerprint> f = m_engine->fingerprint(task.fingerprintSeed);
        if (!f)
            return failed(r, QStringLiteral("fingerprinting the weights after round %1").arg(task.round), f);
        r.fingerprint = QString::fromStdString(f->toText());
    }
    return true;
}

// SPARTA's partitions.
bool EngineWorker::runSetWeights(const EngineTask& task, EngineResult& r) {
    const Status s = m_engine->setPartition(task.partition, task.partitions, task.values);
    if (!s) {
        r.error = QStringLiteral("setting partition %1 of %2").arg(task.partition).arg(task.partitions) +
                  QStringLiteral(": ") + text(s.message());
        return false;
    }
    return true;
}

// A ghost sync's chunk of the weights.
bool EngineWorker::runSetWeightsRange(const EngineTask& task, EngineResult& r) {
    if (m_misbehaviour && m_misbehaviour->refusesSyncs()) { // tests only: the weights it is given, refused
        r.error = QStringLiteral("syncing weights: refused (misbehaving)");
        return false;
    }
    const Status s = m_engine->setWeightsRange(task.offset, task.total, task.values);
    if (!s) {
        r.error = QStringLiteral("syncing weights %1 to %2 of %3")
                      .arg(task.offset)
                      .arg(task.offset + qint64(task.values.size()))
                      .arg(task.total) +
                  QStringLiteral(": ") + text(s.message());
        return false;
    }
    if (task.optimizerSteps >= 0)
        m_engine->setOptimizerSteps(task.optimizerSteps);
    return true;
}

bool EngineWorker::runProbe(const EngineTask& task, EngineResult& r) {
    gpu::StageEngine& engine = *m_engine;
    const bool last = engine.stage() == engine.config().stages - 1;
    Result<gpu::Bytes> input = engine.syntheticInput(task.batch, task.seq, task.seed);
    Result<gpu::Bytes> targets = last ? engine.syntheticTargets(task.batch, task.seq, task.seed + 1)
                                      : Result<gpu::Bytes>(gpu::Bytes{});
    Result<gpu::Bytes> grad = last ? Result<gpu::Bytes>(gpu::Bytes{})
                                   : engine.syntheticGradient(task.batch, task.seq, task.seed + 2);
    for (const Result<gpu::Bytes>* frame : {&input, &targets, &grad})
        if (!*frame)
            return failed(r, QStringLiteral("probe of %1×%2").arg(task.batch).arg(task.seq), *frame);
    // Isolated: the probe's synthetic gradients never reach the optimizer.
    gpu::StageForwardResult forward;
    gpu::StageBackwardResult backward;
    const Status probed = engine.isolated([&]() -> Status {
        auto f = engine.forward(kProbeMicrobatch, *input, *targets);
        if (!f)
            return makeError("probe forward: " + f.message());
        forward = std::move(*f);
        auto b = engine.backward(kProbeMicrobatch, *grad, *input, *targets);
        engine.drop(kProbeMicrobatch);
        if (!b)
            return makeError("probe backward: " + b.message());
        backward = std::move(*b);
        return {};
    });
    if (!probed)
        return failed(r, QStringLiteral("probe"), probed);
    r.loss = backward.loss;
    r.tokens = forward.tokens;
    const std::int64_t n = engine.parameterCount();
    r.flop =
        gpu::StageEngine::forwardFlop(n, forward.tokens) + gpu::StageEngine::backwardFlop(n, forward.tokens);
    return true;
}

void EngineWorker::emitStats() {
    const Clock::time_point now = Clock::now();
    EngineStats s;
    s.computeShareWindow = m_throttle.computeShare(now);
    s.computeShareTotal = m_throttle.totalComputeShare(now);
    s.tasksDone = m_tasksDone;
    s.queued = int(m_queue.size());
    s.paused = m_pausedReported;
    s.limit = m_throttle.limit();
    s.lastTaskSeconds = m_lastTaskSeconds;
    reply([this, s] { Q_EMIT statsChanged(s); });
}

} // namespace tessera::node
