// SPDX-License-Identifier: Apache-2.0
// bench_node_engine: the node's engine thread on a real stage: compute share vs limit, soft-pause latency,
// idle CPU.
//
// bench_node_engine [PHASE_S=10] [PAUSES=50] [BATCH=auto] [SEQ=256]
// A stream of forward+backward tasks (and a step every 8 microbatches) on stage 0 of the tiny
// preset cut in 2 stages, on the CPU. Everything is measured side by side in one run and
// printed; nothing is asserted.
#include "node/engine/EngineThread.h"
#include "node/engine/EngineWorker.h"

#include "engine/StageEngine.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QRandomGenerator>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

using namespace tessera;
using namespace tessera::node;

namespace {

constexpr int kInFlight = 6;  // tasks kept queued so the engine never starves
constexpr int kStepEvery = 8; // microbatches per optimizer step
constexpr int kFrameVariants = 4;

qint64 nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Runs the event loop until done() or the deadline. QTest::qWaitFor would sleep 10 ms between
// polls, which would show up in every latency measured here.
bool waitFor(const std::function<bool()>& done, int ms) {
    QElapsedTimer t;
    t.start();
    QTimer wake;
    wake.start(20);
    while (!done()) {
        if (t.elapsed() > ms)
            return false;
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    }
    return true;
}

void sleepInLoop(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, std::size_t(p / 100.0 * double(v.size())))];
}

double selfCpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

QByteArray toByteArray(const gpu::Bytes& b) {
    return QByteArray(reinterpret_cast<const char*>(b.data()), qsizetype(b.size()));
}

// Feeds the worker forward/backward pairs and a step every kStepEvery microbatches, keeping
// kInFlight tasks queued, and records every result.
class Stream final {
public:
    Stream(EngineWorker* worker, std::vector<QByteArray> inputs, std::vector<QByteArray> grads)
        : m_worker(worker)
        , m_inputs(std::move(inputs))
        , m_grads(std::move(grads)) {
        QObject::connect(worker, &EngineWorker::taskFinished, &m_context, [this](const EngineResult& r) {
            if (!r.ok && m_errors++ < 3)
                std::fprintf(stderr, "task %lld failed: %s\n", static_cast<long long>(r.taskId),
                             qPrintable(r.error));
            m_results.push_back(r);
            --m_outstanding;
            topUp();
        });
    }

    void start() { topUp(); }
    const std::vector<EngineResult>& results() const { return m_results; }
    int errors() const { return m_errors; }

private:
    void topUp() {
        while (m_outstanding < kInFlight) {
            EngineTask t;
            t.taskId = m_nextTask++;
            t.microbatch = m_microbatch;
            const std::size_t v = std::size_t(m_microbatch) % m_inputs.size();
            if (m_phase == 0) {
                t.kind = EngineTask::Forward;
                t.input = m_inputs[v];
                m_phase = 1;
            } else if (m_phase == 1) {
                t.kind = EngineTask::Backward;
                t.gradOutput = m_grads[v];
                ++m_microbatch;
                m_phase = m_microbatch % kStepEvery == 0 ? 2 : 0;
            } else {
                t.kind = EngineTask::Step;
                t.microbatches = kStepEvery;
                m_phase = 0;
            }
            m_worker->submit(t);
            ++m_outstanding;
        }
    }

    EngineWorker* m_worker;
    std::vector<QByteArray> m_inputs;
    std::vector<QByteArray> m_grads;
    QObject m_context; // the connection's receiver: lives on this (the bench's) thread
    std::vector<EngineResult> m_results;
    std::int64_t m_nextTask = 1;
    std::int64_t m_microbatch = 0;
    int m_phase = 0;
    int m_outstanding = 0;
    int m_errors = 0;
};

// Compute time of `results` inside [from, to], in ns.
double busyNs(const std::vector<EngineResult>& results, qint64 from, qint64 to) {
    double busy = 0;
    for (const EngineResult& r : results) {
        const qint64 a = std::max(r.startedNs, from);
        const qint64 b = std::min(r.finishedNs, to);
        if (b > a)
            busy += double(b - a);
    }
    return busy;
}

std::vector<double> durationsMs(const std::vector<EngineResult>& results, std::size_t from,
                                EngineTask::Kind kind) {
    std::vector<double> d;
    for (std::size_t i = from; i < results.size(); ++i)
        if (results[i].kind == kind)
            d.push_back(results[i].computeSeconds * 1e3);
    return d;
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const int phaseS = argc > 1 ? std::max(2, std::atoi(argv[1])) : 10;
    const int pauses = argc > 2 ? std::max(1, std::atoi(argv[2])) : 50;
    int batch = argc > 3 ? std::max(1, std::atoi(argv[3])) : 0;
    const int seq = argc > 4 ? std::max(1, std::atoi(argv[4])) : 256;

    gpu::StageEngineOptions options;
    options.config = gpu::ModelConfig::preset("tiny").value();
    options.config.stages = 2;
    options.stage = 0;

    // Frames come from a second engine of the same stage: the worker's own stays untouched here.
    Result<std::unique_ptr<gpu::StageEngine>> data = gpu::StageEngine::create(options);
    if (!data) {
        std::fprintf(stderr, "StageEngine: %s\n", data.message().c_str());
        return 1;
    }
    // Auto batch: the smallest power of two whose forward+backward pair takes ≥ 60 ms, so one
    // task (what a pause may have to wait for) lands in the 20–100 ms the node is tuned for.
    if (batch == 0) {
        for (batch = 1; batch < 256; batch *= 2) {
            auto in = (*data)->syntheticInput(batch, seq, 1);
            auto g = (*data)->syntheticGradient(batch, seq, 2);
            if (!in || !g)
                break;
            (void)(*data)->forward(0, *in); // warm-up
            (void)(*data)->backward(0, *g);
            QElapsedTimer t;
            t.start();
            (void)(*data)->forward(0, *in);
            (void)(*data)->backward(0, *g);
            if (t.nsecsElapsed() >= 60'000'000)
                break;
        }
    }
    std::vector<QByteArray> inputs, grads;
    for (int v = 0; v < kFrameVariants; ++v) {
        auto in = (*data)->syntheticInput(batch, seq, 100 + std::uint64_t(v));
        auto g = (*data)->syntheticGradient(batch, seq, 200 + std::uint64_t(v));
        if (!in || !g) {
            std::fprintf(stderr, "synthetic frames: %s\n", (!in ? in.message() : g.message()).c_str());
            return 1;
        }
        inputs.push_back(toByteArray(*in));
        grads.push_back(toByteArray(*g));
    }
    std::printf("bench_node_engine: %s\n", (*data)->describe().c_str());
    std::printf("microbatch %d x %d tokens; stream: forward, backward, and a step every %d microbatches; "
                "%d tasks kept queued\n",
                batch, seq, kStepEvery, kInFlight);
    data->reset();

    EngineThread thread;
    EngineWorker* worker = thread.worker();
    QString loadError = QStringLiteral("(no answer)");
    bool loaded = false;
    QObject::connect(worker, &EngineWorker::loaded, &app, [&](const QString& error, qint64) {
        loadError = error;
        loaded = true;
    });
    bool pausedReported = false;
    qint64 pausedReportNs = 0;
    QObject::connect(worker, &EngineWorker::pausedChanged, &app, [&](bool paused) {
        pausedReported = paused;
        pausedReportNs = nowNs();
    });
    worker->load(EngineLoadOptions{options, {}, {}});
    if (!waitFor([&] { return loaded; }, 120'000) || !loadError.isEmpty()) {
        std::fprintf(stderr, "load: %s\n", qPrintable(loadError));
        return 1;
    }

    Stream stream(worker, inputs, grads);
    stream.start();

    // 1. Compute share at each limit: 1 s to settle, then phaseS s measured on the results' clock.
    struct Phase {
        double limit;
        double share;
        std::size_t tasks;
        double forwardP50;
        double backwardP50;
    };
    std::vector<Phase> phases;
    for (const double limit : {0.3, 0.6, 1.0}) {
        worker->setLimit(limit);
        sleepInLoop(1000);
        const std::size_t first = stream.results().size();
        const qint64 from = nowNs();
        sleepInLoop(phaseS * 1000);
        const qint64 to = nowNs();
        // The task running at `to` still counts up to `to`: wait for its result.
        waitFor([&] { return !stream.results().empty() && stream.results().back().finishedNs >= to; },
                10'000);
        const double share = busyNs(stream.results(), from, to) / double(to - from);
        phases.push_back({limit, share, stream.results().size() - first,
                          percentile(durationsMs(stream.results(), first, EngineTask::Forward), 50),
                          percentile(durationsMs(stream.results(), first, EngineTask::Backward), 50)});
        std::printf("  limit %3.0f%%: measured %5.1f%%\n", limit * 100, share * 100);
    }

    // 2. Soft-pause latency at limit 100%, at random moments of the stream.
    QRandomGenerator random(42);
    std::vector<double> toStopMs, toSignalMs;
    int startedAfterPause = 0;
    int timeouts = 0;
    for (int i = 0; i < pauses; ++i) {
        sleepInLoop(150 + int(random.bounded(550)));
        const qint64 command = nowNs();
        worker->setPaused(true);
        if (!waitFor([&] { return pausedReported; }, 10'000)) {
            ++timeouts;
            continue;
        }
        toSignalMs.push_back(double(pausedReportNs - command) / 1e6);
        // Every result is delivered before pausedChanged(true) (same sender, same order).
        qint64 lastCompute = command;
        for (const EngineResult& r : stream.results()) {
            lastCompute = std::max(lastCompute, r.finishedNs);
            if (r.startedNs > command)
                ++startedAfterPause;
        }
        toStopMs.push_back(double(lastCompute - command) / 1e6);
        worker->setPaused(false);
        waitFor([&] { return !pausedReported; }, 10'000);
    }

    // 3. CPU while paused: the worker thread and LibTorch's pool should sleep.
    worker->setPaused(true);
    waitFor([&] { return pausedReported; }, 10'000);
    const std::size_t resultsAtPause = stream.results().size();
    const double cpu0 = selfCpuSeconds();
    QElapsedTimer idle;
    idle.start();
    sleepInLoop(1'000);
    const double cpu1 = selfCpuSeconds();
    const double wall1 = double(idle.nsecsElapsed()) / 1e9;
    sleepInLoop(9'000);
    const double wall = double(idle.nsecsElapsed()) / 1e9;
    const double pausedCpu = (selfCpuSeconds() - cpu0) / wall;
    const double settledCpu = (selfCpuSeconds() - cpu1) / (wall - wall1);
    const bool quiet = stream.results().size() == resultsAtPause;

    std::printf("\ncompute share, forward+backward stream, %d s per limit (target: within 5 points)\n",
                phaseS);
    std::printf("%8s %10s %8s %7s %12s %12s\n", "limit", "measured", "diff", "tasks", "forward p50",
                "backward p50");
    for (const Phase& p : phases)
        std::printf("%7.0f%% %9.1f%% %+6.1f pt %7zu %9.1f ms %9.1f ms\n", p.limit * 100, p.share * 100,
                    (p.share - p.limit) * 100, p.tasks, p.forwardP50, p.backwardP50);

    std::printf("\nsoft pause at limit 100%%, %zu pauses at random moments (target p99 <= 250 ms)\n",
                toSignalMs.size());
    std::printf("%-34s %9s %9s %9s\n", "", "p50", "p99", "max");
    std::printf("%-34s %6.1f ms %6.1f ms %6.1f ms\n", "command -> no more compute", percentile(toStopMs, 50),
                percentile(toStopMs, 99), percentile(toStopMs, 100));
    std::printf("%-34s %6.1f ms %6.1f ms %6.1f ms\n", "command -> pausedChanged(true) here",
                percentile(toSignalMs, 50), percentile(toSignalMs, 99), percentile(toSignalMs, 100));
    const std::vector<double> all = [&] {
        std::vector<double> d;
        for (const EngineResult& r : stream.results())
            if (r.kind != EngineTask::Step)
                d.push_back(r.computeSeconds * 1e3);
        return d;
    }();
    std::printf("microbatch task (forward or backward) p50 %.1f ms, max %.1f ms\n", percentile(all, 50),
                percentile(all, 100));
    std::printf("tasks started after a pause command: %d; pauses never reported: %d\n", startedAfterPause,
                timeouts);

    std::printf("\npaused 10 s: CPU %.2f%% of one core (target < 0.5%%); after its first second: %.3f%%; "
                "tasks finished meanwhile: %s\n",
                pausedCpu * 100, settledCpu * 100, quiet ? "none" : "SOME");
    std::printf("task errors: %d\n", stream.errors());
    return 0;
}
