// SPDX-License-Identifier: Apache-2.0
// bench_swarm: the real swarm — tessera-coordinator and tessera-node processes on loopback —
// measured side by side in one run against the in-process SwarmSimulator and against itself:
//   1. train loss at equal tokens (S=2 x R=1, subspace codec, N steps): the simulator, the swarm
//      with synchronous steps (the default) and the swarm with --pipeline async;
//   2. each node's share of wall time spent computing, on plain loopback and behind an emulated
//      home link (DelayRelay: 50 ms one way, 100 Mbit/s each direction), window 8 (synchronous
//      and the asynchronous pipeline, and 16 async on the home link) against window 1;
//   3. tokens/s with 4 nodes (S=2 x R=2) without churn, then with a node SIGKILLed and a fresh one
//      started every 10 s;
//   4. train loss at equal tokens with replicas (S=2 x R=2, synchronous steps): the simulator and
//      the swarm, where the replicas of a stage average their gradients every step.
//
// bench_swarm [STEPS=150] [CHURN_WINDOW_S=60] [DIR] [PARTS=123]
//   DIR keeps every log (default: a temp dir); PARTS picks tables, e.g. 2 for the compute shares only.
// Everything is printed; nothing is asserted.
#include "BenchSwarm.h"

using namespace tessera::bench;

namespace {

// --- Loss at equal tokens (table 1) ---

struct Counters {
    qint64 tokens = 0, issued = 0, completed = 0, abandoned = 0, inFlight = 0, retries = 0, joins = 0,
           leaves = 0;
    static Counters of(const QJsonObject& s) {
        const QJsonObject m = s.value(u"microbatches").toObject();
        return {s.value(u"tokens").toInteger(),    m.value(u"issued").toInteger(),
                m.value(u"completed").toInteger(), m.value(u"abandoned").toInteger(),
                m.value(u"in_flight").toInteger(), m.value(u"retries").toInteger(),
                s.value(u"joins").toInteger(),     s.value(u"leaves").toInteger()};
    }
    Counters operator-(const Counters& o) const {
        return {tokens - o.tokens, issued - o.issued,   completed - o.completed, abandoned - o.abandoned,
                inFlight,          retries - o.retries, joins - o.joins,         leaves - o.leaves};
    }
};

using Curve = std::map<qint64, double>; // step -> mean train loss

// The mean of the losses of steps (last - 9) .. last; NaN when there are none.
double meanOfLast10(const Curve& curve, qint64 last) {
    double sum = 0;
    int n = 0;
    for (qint64 s = last - 9; s <= last; ++s)
        if (auto it = curve.find(s); it != curve.end()) {
            sum += it->second;
            ++n;
        }
    return n ? sum / n : std::nan("");
}

// One N-step training run of a started coordinator with kStages fresh nodes.
struct SwarmCurve {
    bool started = false;
    bool finished = false;
    Curve loss;                      // the coordinator's loss_curve
    std::map<qint64, qint64> tokens; // step -> tokens trained
    Counters counters;
    double seconds = 0; // nodes started -> step N seen (1 s polling)
};

// `duringTraining` runs once the swarm has made two steps.
SwarmCurve trainSwarm(LocalSwarm& swarm, int steps, const std::function<void()>& duringTraining,
                      int replicas = 1) {
    SwarmCurve c;
    QElapsedTimer t;
    t.start();
    if (!addNodesAndWait(swarm, replicas * kStages))
        return c;
    c.started = true;
    if (duringTraining)
        duringTraining();
    c.finished = waitStep(swarm, steps, 3'600'000);
    c.seconds = double(t.elapsed()) / 1000;
    const QJsonObject status = swarm.get(QStringLiteral("/v1/status"));
    for (const QJsonValue& v : status.value(u"loss_curve").toArray()) {
        const QJsonArray p = v.toArray();
        c.loss[p.at(0).toInteger()] = p.at(1).toDouble();
        c.tokens[p.at(0).toInteger()] = p.at(2).toInteger();
    }
    c.counters = Counters::of(status);
    return c;
}

void writeCurves(const QString& path, int steps, const Curve& sim, const Curve& sync, const Curve& async) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return;
    const auto value = [](const Curve& m, qint64 s) {
        return m.count(s) ? QByteArray::number(m.at(s), 'f', 6) : QByteArray();
    };
    f.write("step,tokens,simulator,swarm_sync,swarm_async\n");
    for (qint64 s = 1; s <= steps; ++s)
        f.write(QByteArray::number(s) + ',' + QByteArray::number(s * kTokensPerStep) + ',' + value(sim, s) +
                ',' + value(sync, s) + ',' + value(async, s) + '\n');
}

void printLoss(int steps, const SimulatorCurve& sim, const SwarmCurve& sync, const SwarmCurve& async,
               const ShareRun& syncShare, const QString& csv) {
    Curve simLoss;
    for (std::size_t i = 0; i < sim.trainLoss.size(); ++i)
        simLoss[qint64(i) + 1] = sim.trainLoss[i];
    std::printf("1. Train loss at equal tokens: S=%d x R=1, tiny, subspace codec, %d microbatches x %d x %d "
                "tokens per step, window 8, AdamW defaults, %d steps\n",
                kStages, kMicrobatches, kBatch, kSeq, steps);
    std::printf(
        "   reference: %s; data seed %llu (= the model's seed, which the coordinator uses); %d LibTorch "
        "threads\n",
        sim.description.c_str(), static_cast<unsigned long long>(sim.seed), sim.threads);
    std::printf(
        "   swarm sync = the default (no microbatch of the next step starts before this step's update); "
        "async = --pipeline async (one update stale, same weights forward and backward)\n");
    std::printf("   %-6s %10s %10s %12s %9s %14s %9s\n", "step", "tokens", "simulator", "swarm sync",
                "vs sim", "swarm async", "vs sim");
    std::vector<qint64> shown{1, 10};
    for (qint64 s = 25; s < steps; s += 25)
        shown.push_back(s);
    shown.push_back(steps);
    const auto cell = [](const Curve& m, qint64 s) {
        return m.count(s) ? QString::number(m.at(s), 'f', 4) : QStringLiteral("-");
    };
    const auto ratio = [&](const Curve& m, qint64 s) {
        return m.count(s) && simLoss.count(s)
                   ? QStringLiteral("%1%").arg(100 * m.at(s) / simLoss.at(s), 0, 'f', 1)
                   : QStringLiteral("-");
    };
    for (qint64 s : shown)
        std::printf("   %-6lld %10lld %10s %12s %9s %14s %9s\n", qlonglong(s), qlonglong(s * kTokensPerStep),
                    qPrintable(cell(simLoss, s)), qPrintable(cell(sync.loss, s)),
                    qPrintable(ratio(sync.loss, s)), qPrintable(cell(async.loss, s)),
                    qPrintable(ratio(async.loss, s)));
    const double simFinal = meanOfLast10(simLoss, steps);
    const auto verdict = [&](const SwarmCurve& c) {
        const double r = meanOfLast10(c.loss, steps) / simFinal;
        return !c.finished
                   ? QStringLiteral("did not reach step %1").arg(steps)
                   : QStringLiteral("%1 = %2% of the simulator's (target within 5%: %3)")
                         .arg(meanOfLast10(c.loss, steps), 0, 'f', 4)
                         .arg(100 * r, 0, 'f', 1)
                         .arg(std::abs(r - 1) <= 0.05 ? QStringLiteral("met") : QStringLiteral("not met"));
    };
    std::printf("   mean train loss of steps %d-%d: simulator %.4f\n", steps - 9, steps, simFinal);
    std::printf("     swarm sync (default)  %s\n", qPrintable(verdict(sync)));
    std::printf("     swarm --pipeline async %s\n", qPrintable(verdict(async)));
    std::printf("   tokens at step %d: simulator %lld, swarm sync %lld, async %lld\n", steps,
                qlonglong(sim.tokens), qlonglong(sync.tokens.count(steps) ? sync.tokens.at(steps) : -1),
                qlonglong(async.tokens.count(steps) ? async.tokens.at(steps) : -1));
    std::printf(
        "   time: simulator %.0f s (%.0f tokens/s, one process); swarm %.0f s sync, %.0f s async from "
        "the nodes' start to step %d (sync: %.0f tokens/s in table 2's window)\n",
        sim.seconds, double(sim.tokens) / sim.seconds, sync.seconds, async.seconds, steps,
        syncShare.tokensPerSecond);
    std::printf(
        "   microbatches issued/completed/abandoned: sync %lld/%lld/%lld, async %lld/%lld/%lld; curves: "
        "%s\n\n",
        qlonglong(sync.counters.issued), qlonglong(sync.counters.completed),
        qlonglong(sync.counters.abandoned), qlonglong(async.counters.issued),
        qlonglong(async.counters.completed), qlonglong(async.counters.abandoned), qPrintable(csv));
    std::fflush(stdout);
}

// What the simulator needs to train as the swarm does: the coordinator's own model config and batch.
SimulatorRequest simulatorRequest(LocalSwarm& swarm, int steps, int replicas) {
    SimulatorRequest request;
    request.modelJson = QJsonDocument(swarm.get(QStringLiteral("/v1/info")).value(u"model").toObject())
                            .toJson()
                            .toStdString();
    request.replicas = replicas;
    request.microbatchesPerStep = kMicrobatches;
    request.batch = kBatch;
    request.seq = kSeq;
    request.averagingInterval = kAveragingInterval;
    request.partitions = kPartitions;
    request.steps = steps;
    const QJsonObject gradients = swarm.get(QStringLiteral("/v1/status")).value(u"gradients").toObject();
    request.gradientBits = gradients.value(u"bits").toInt(32);
    request.gradientRank = gradients.value(u"rank").toInt(0);
    return request;
}

// The simulator, then the swarm with synchronous and with the asynchronous pipeline; each swarm's
// compute shares are measured while it trains (table 2's loopback rows). False on failure.
bool lossTable(const QString& dir, int steps, std::vector<ShareRun>& shares) {
    LocalSwarm syncSwarm(dir + QStringLiteral("/loss-sync"), coordinatorArguments({8, false}, steps));
    if (!startCoordinator(syncSwarm))
        return false;
    const SimulatorRequest request = simulatorRequest(syncSwarm, steps, 1);
    note(QStringLiteral("1. simulator, %1 steps (the coordinator idles meanwhile)").arg(steps));
    const SimulatorCurve sim = runSimulator(request, [](int step, double loss) {
        if (step % 25 == 0)
            std::fprintf(stderr, "  sim step %d loss %.4f\n", step, loss);
    });
    if (!sim.error.empty()) {
        note(QStringLiteral("simulator: ") + QString::fromStdString(sim.error));
        return false;
    }
    note(QStringLiteral("1. real swarm, synchronous steps, %1 steps").arg(steps));
    const SwarmCurve sync = trainSwarm(syncSwarm, steps, [&] {
        shares.push_back(measureShares(syncSwarm, QStringLiteral("loopback"), {8, false}, nullptr));
    });
    syncSwarm.stop();
    note(QStringLiteral("1. real swarm, --pipeline async, %1 steps").arg(steps));
    LocalSwarm asyncSwarm(dir + QStringLiteral("/loss-async"), coordinatorArguments({8, true}, steps));
    if (!sync.started || !startCoordinator(asyncSwarm))
        return false;
    const SwarmCurve async = trainSwarm(asyncSwarm, steps, [&] {
        shares.push_back(measureShares(asyncSwarm, QStringLiteral("loopback"), {8, true}, nullptr));
    });
    asyncSwarm.stop();
    if (!async.started)
        return false;
    Curve simLoss;
    for (std::size_t i = 0; i < sim.trainLoss.size(); ++i)
        simLoss[qint64(i) + 1] = sim.trainLoss[i];
    const QString csv = dir + QStringLiteral("/loss-curves.csv");
    writeCurves(csv, steps, simLoss, sync.loss, async.loss);
    printLoss(steps, sim, sync, async, shares.front(), csv);
    return true;
}

// --- Replicas (table 4) ---

bool replicaTable(const QString& dir, int steps) {
    // BENCH_SWARM_RANK=R: the gradient exchange at rank R (PowerSGD's two rounds) in both.
    QStringList extra;
    if (const QByteArray rank = qgetenv("BENCH_SWARM_RANK"); !rank.isEmpty())
        extra << QStringLiteral("--gradient-rank") << QString::fromLatin1(rank);
    LocalSwarm swarm(dir + QStringLiteral("/replicas"),
                     coordinatorArguments({8, false, kMicrobatches, extra}, steps));
    if (!startCoordinator(swarm))
        return false;
    SimulatorRequest request = simulatorRequest(swarm, steps, 2);
    note(QStringLiteral("4. simulator S=%1 x R=2, %2 steps").arg(kStages).arg(steps));
    const SimulatorCurve sim = runSimulator(request);
    // The same run with each microbatch routed to another replica: the same mean gradient every
    // step up to float rounding, so the two curves show how far rounding alone carries a run.
    request.routingSeed = 7;
    note(QStringLiteral("4. simulator S=%1 x R=2, %2 steps, other routing").arg(kStages).arg(steps));
    const SimulatorCurve other = runSimulator(request);
    if (!sim.error.empty() || !other.error.empty()) {
        note(QStringLiteral("simulator: ") + QString::fromStdString(sim.error + other.error));
        return false;
    }
    note(QStringLiteral("4. real swarm S=%1 x R=2, %2 steps").arg(kStages).arg(steps));
    const SwarmCurve real = trainSwarm(swarm, steps, {}, 2);
    const QJsonObject gradients = swarm.get(QStringLiteral("/v1/status")).value(u"gradients").toObject();
    swarm.stop();
    if (!real.started)
        return false;
    std::printf(
        "4. train loss at equal tokens, S=%d x R=2 (4 nodes), synchronous steps, gradients averaged every "
        "step (%s, %d bits)\n   %6s %12s %10s %10s %10s %13s %8s\n",
        kStages, gradients.value(u"rank").toInt() ? "low rank" : "dense", gradients.value(u"bits").toInt(32),
        "step", "tokens", "simulator", "sim other", "swarm", "other vs sim", "vs sim");
    const auto at = [](const SimulatorCurve& c, int s) {
        return c.trainLoss.size() >= std::size_t(s) ? c.trainLoss[std::size_t(s) - 1] : -1.0;
    };
    const auto gap = [](double a, double b) { return a > 0 && b > 0 ? 100.0 * (a - b) / b : 0.0; };
    double worstOther = 0, worstSwarm = 0;
    for (int s = 1; s <= steps; ++s) {
        const double simLoss = at(sim, s), otherLoss = at(other, s);
        const double swarmLoss = real.loss.count(s) ? real.loss.at(s) : -1;
        worstOther = std::max(worstOther, std::abs(gap(otherLoss, simLoss)));
        worstSwarm = std::max(worstSwarm, std::abs(gap(swarmLoss, simLoss)));
        if (s % (s < 50 ? 10 : 25) == 0)
            std::printf("   %6d %12lld %10.4f %10.4f %10.4f %12.2f%% %7.2f%%\n", s,
                        qlonglong(s) * kTokensPerStep, simLoss, otherLoss, swarmLoss, gap(otherLoss, simLoss),
                        gap(swarmLoss, simLoss));
    }
    std::printf(
        "   largest difference from the simulator over all %d steps: other routing %.2f%%, swarm %.2f%%\n",
        steps, worstOther, worstSwarm);
    std::printf("   swarm: %lld gradient rounds, %lld shares counted, %lld missed, %lld clipped; %.0f s\n\n",
                qlonglong(gradients.value(u"rounds").toInteger()),
                qlonglong(gradients.value(u"shares_counted").toInteger()),
                qlonglong(gradients.value(u"shares_missed").toInteger()),
                qlonglong(gradients.value(u"shares_clipped").toInteger()), real.seconds);
    std::fflush(stdout);
    return true;
}

// --- Churn (table 3) ---

bool churnTable(const QString& dir, int churnS) {
    note(QStringLiteral("3. churn: 4 nodes, %1 s without churn, then %1 s with churn").arg(churnS));
    LocalSwarm swarm(dir + QStringLiteral("/churn"), coordinatorArguments({8, false}, 0));
    if (!startCoordinator(swarm) || !addNodesAndWait(swarm, 2 * kStages))
        return false;
    sleepWithEvents(kWarmupS * 1000);
    const Counters a = Counters::of(swarm.get(QStringLiteral("/v1/status")));
    QElapsedTimer t;
    t.start();
    sleepWithEvents(churnS * 1000);
    const Counters b = Counters::of(swarm.get(QStringLiteral("/v1/status")));
    const double calmSeconds = double(t.nsecsElapsed()) / 1e9;
    const QString calmLoad = loadAverage();
    std::mt19937 pick(6);
    int killed = 0;
    t.restart();
    for (qint64 next = 0; next < qint64(churnS) * 1000; next += kChurnEveryS * 1000) {
        while (t.elapsed() < next)
            sleepWithEvents(int(std::min<qint64>(200, next - t.elapsed())));
        const QList<int> running = swarm.runningNodes();
        if (!running.isEmpty()) {
            swarm.killNode(running.at(int(pick() % std::uint32_t(running.size()))));
            ++killed;
        }
        swarm.addNode();
    }
    while (t.elapsed() < qint64(churnS) * 1000)
        sleepWithEvents(200);
    const Counters c = Counters::of(swarm.get(QStringLiteral("/v1/status")));
    const double churnSeconds = double(t.nsecsElapsed()) / 1e9;
    int working = 0;
    for (int i : swarm.runningNodes())
        working += swarm.nodeStatus(i).value(u"state").toString() == u"Working" ? 1 : 0;
    swarm.stop();

    const Counters calm = b - a, churn = c - b;
    std::printf(
        "3. Tokens/s under churn: S=%d x R=2 (4 nodes), window 8, synchronous steps; churn = every %d s "
        "one node SIGKILLed (chosen at random) and a fresh node started\n",
        kStages, kChurnEveryS);
    std::printf("   %-14s %7s %9s %9s %7s %9s %9s %7s %6s %6s  %s\n", "", "seconds", "tokens", "tokens/s",
                "issued", "completed", "abandoned", "retries", "joins", "leaves", "load avg after");
    const auto row = [](const char* name, double seconds, const Counters& k, const QString& load) {
        std::printf("   %-14s %7.1f %9lld %9.0f %7lld %9lld %9lld %7lld %6lld %6lld  %s\n", name, seconds,
                    qlonglong(k.tokens), double(k.tokens) / seconds, qlonglong(k.issued),
                    qlonglong(k.completed), qlonglong(k.abandoned), qlonglong(k.retries), qlonglong(k.joins),
                    qlonglong(k.leaves), qPrintable(load));
    };
    row("without churn", calmSeconds, calm, calmLoad);
    row("with churn", churnSeconds, churn, loadAverage());
    std::printf(
        "   churn / no churn: %.1f%% of the tokens/s; %d nodes killed, %d fresh nodes started; %d of the "
        "running nodes Working at the end\n",
        100 * (double(churn.tokens) / churnSeconds) / (double(calm.tokens) / calmSeconds), killed, killed,
        working);
    std::printf("   whole run: issued %lld = completed %lld + abandoned %lld + in flight %lld: %s\n\n",
                qlonglong(c.issued), qlonglong(c.completed), qlonglong(c.abandoned), qlonglong(c.inFlight),
                c.issued == c.completed + c.abandoned + c.inFlight ? "accounted for" : "MISMATCH");
    std::fflush(stdout);
    return true;
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const int steps = argc > 1 ? std::max(12, std::atoi(argv[1])) : 150;
    const int churnS = argc > 2 ? std::max(20, std::atoi(argv[2])) : 60;
    QTemporaryDir temp;
    const QString dir = argc > 3 && argv[3][0] ? QString::fromLocal8Bit(argv[3]) : temp.path();
    const QByteArray parts = argc > 4 ? QByteArray(argv[4]) : QByteArray("123");
    QElapsedTimer total;
    total.start();

    std::printf(
        "bench_swarm %d %d%s %s: the real swarm on loopback (coordinator and nodes as processes) against "
        "the in-process SwarmSimulator, side by side in one run\n",
        steps, churnS, argc > 3 ? " DIR" : "", parts.constData());
    std::printf("machine: %d cores, load average %s at the start (other processes share these cores)\n",
                QThread::idealThreadCount(), qPrintable(loadAverage()));
    std::printf(
        "coordinator: tessera-coordinator --data-dir D --listen 127.0.0.1:0 %s\n"
        "             (table 1 also with --pipeline async; tables 2-3: --window 8, 16 or 1, with or without "
        "--pipeline async, no --max-steps)\n",
        qPrintable(coordinatorArguments({8, false}, steps).join(u' ')));
    std::printf("node:        %s\n",
                qPrintable(LocalSwarm::nodeCommand(QStringLiteral("URL"), QStringLiteral("D/tls.crt"))));
    std::printf(
        "home link:   DelayRelay between nodes and coordinator: %lld ms one way, %.0f Mbit/s per direction "
        "(serializer + delay line; tc netem is not available here)\n",
        qlonglong(std::chrono::duration_cast<std::chrono::milliseconds>(kHomeLink.oneWayDelay).count()),
        kHomeLink.bitsPerSecond / 1e6);
    std::printf("logs:        %s\n\n", qPrintable(dir));
    std::fflush(stdout);

    std::vector<ShareRun> shares;
    if (parts.contains('1') && !lossTable(dir, steps, shares))
        return 1;
    if (parts.contains('2')) {
        struct Config {
            const char* link;
            Flow flow;
            bool relayed;
        };
        std::vector<Config> configs{{"loopback", {1, false}, false},      {"home link", {8, false}, true},
                                    {"home link", {8, true}, true},       {"home link", {16, true}, true},
                                    {"home link", {16, false, 32}, true}, {"home link", {1, false}, true}};
        if (shares.empty()) // table 1 did not run: its loopback rows need swarms of their own
            configs.insert(configs.begin(),
                           {{"loopback", {8, false}, false}, {"loopback", {8, true}, false}});
        for (const Config& c : configs) {
            std::optional<ShareRun> run = shareRun(dir, QString::fromLatin1(c.link), c.flow, c.relayed);
            if (!run)
                return 1;
            shares.push_back(*run);
        }
        printShares(shares);
    }
    if (parts.contains('5')) {
        // What the step's gradient exchange costs behind the home link: without it (nodes step on
        // their own gradients, as before issue 16), at rank 16, and in 8 bits (--gradient-bits 8).
        const QStringList off{QStringLiteral("--gradient-averaging"), QStringLiteral("0")};
        const QStringList rank16{QStringLiteral("--gradient-rank"), QStringLiteral("16")};
        const QStringList bits8{QStringLiteral("--gradient-bits"), QStringLiteral("8")};
        std::vector<Flow> flows{{8, false, kMicrobatches, off, QStringLiteral("no-exchange")},
                                {8, true, kMicrobatches, rank16, QStringLiteral("rank16")},
                                {8, false, kMicrobatches, bits8, QStringLiteral("8-bit")},
                                {8, true, kMicrobatches, bits8, QStringLiteral("8-bit")},
                                {16, true, kMicrobatches, bits8, QStringLiteral("8-bit")},
                                {16, true, 32, {}, {}},
                                {16, false, 32, bits8, QStringLiteral("8-bit")},
                                {16, true, 32, bits8, QStringLiteral("8-bit")}};
        // BENCH_SWARM_ROWS=a,b: only the rows whose names contain one of these.
        if (const QByteArray only = qgetenv("BENCH_SWARM_ROWS"); !only.isEmpty())
            std::erase_if(flows, [&](const Flow& f) {
                for (const QByteArray& part : only.split(','))
                    if (f.name().contains(QString::fromUtf8(part)))
                        return false;
                return true;
            });
        std::vector<ShareRun> exchange;
        for (const Flow& f : flows) {
            std::optional<ShareRun> run = shareRun(dir, QStringLiteral("home link"), f, true);
            if (!run)
                return 1;
            exchange.push_back(*run);
        }
        printShares(exchange);
    }
    if (parts.contains('3') && !churnTable(dir, churnS))
        return 1;
    if (parts.contains('4') && !replicaTable(dir, steps))
        return 1;
    std::printf("total time %.0f s; load average %s at the end\n", double(total.elapsed()) / 1000,
                qPrintable(loadAverage()));
    return 0;
}
