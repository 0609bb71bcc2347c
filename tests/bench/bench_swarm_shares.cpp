// SPDX-License-Identifier: Apache-2.0
// bench_swarm's table 2: each node's share of wall time spent computing, on loopback and behind
// an emulated home link.
#include "BenchSwarm.h"

namespace tessera::bench {

ShareRun measureShares(LocalSwarm& swarm, const QString& link, Flow flow, const DelayRelay* relay) {
    sleepWithEvents(kWarmupS * 1000);
    const QList<int> nodes = swarm.runningNodes();
    std::map<int, double> cpu0;
    std::map<int, qint64> tasks0;
    for (int i : nodes) {
        cpu0[i] = processCpuSeconds(swarm.nodePid(i));
        tasks0[i] = swarm.nodeStatus(i).value(u"tasks_done").toInteger();
    }
    const double coordinator0 = processCpuSeconds(swarm.coordinatorPid());
    const qint64 tokens0 = swarm.get(QStringLiteral("/v1/status")).value(u"tokens").toInteger();
    const qint64 up0 = relay ? relay->bytesToUpstream() : 0, down0 = relay ? relay->bytesFromUpstream() : 0;
    QElapsedTimer t;
    t.start();
    sleepWithEvents(kShareWindowS * 1000);
    ShareRun run;
    run.link = link;
    run.flow = flow;
    for (int i : nodes) {
        const QJsonObject s = swarm.nodeStatus(i);
        ShareRow row;
        row.node = i;
        row.stage = s.value(u"stage").toInt(-1);
        row.computeShare = s.value(u"compute_share").toDouble();
        row.tasks = s.value(u"tasks_done").toInteger() - tasks0[i];
        row.cpuShare = (processCpuSeconds(swarm.nodePid(i)) - cpu0[i]) / (double(t.nsecsElapsed()) / 1e9);
        run.rows.push_back(row);
    }
    const double seconds = double(t.nsecsElapsed()) / 1e9;
    run.tokensPerSecond =
        double(swarm.get(QStringLiteral("/v1/status")).value(u"tokens").toInteger() - tokens0) / seconds;
    run.coordinatorCpu = (processCpuSeconds(swarm.coordinatorPid()) - coordinator0) / seconds;
    if (relay) {
        run.linkMbitUp = double(relay->bytesToUpstream() - up0) * 8 / seconds / 1e6;
        run.linkMbitDown = double(relay->bytesFromUpstream() - down0) * 8 / seconds / 1e6;
    }
    run.load = loadAverage();
    return run;
}

// A fresh S=2 x R=1 swarm for one configuration, measured once it trains; nullopt when it did not.
std::optional<ShareRun> shareRun(const QString& dir, const QString& link, Flow flow, bool relayed) {
    note(QStringLiteral("2. compute share: %1, %2").arg(link, flow.name()));
    LocalSwarm swarm(dir + QStringLiteral("/share-%1-%2")
                               .arg(relayed ? QStringLiteral("home") : QStringLiteral("loopback"),
                                    flow.name().replace(u' ', u'-')),
                     coordinatorArguments(flow, 0));
    if (!startCoordinator(swarm))
        return std::nullopt;
    std::unique_ptr<DelayRelay> relay;
    QUrl nodeUrl(swarm.url());
    if (relayed) {
        relay = std::make_unique<DelayRelay>(swarm.port(), kHomeLink);
        if (const std::string error = relay->start(); !error.empty()) {
            note(QString::fromStdString(error));
            return std::nullopt;
        }
        nodeUrl.setPort(relay->port());
    }
    if (!addNodesAndWait(swarm, kStages, nodeUrl.toString()))
        return std::nullopt;
    const ShareRun run = measureShares(swarm, link, flow, relay.get());
    swarm.stop(); // before the relay goes: nodes see a clean stop, not a dropped session
    return run;
}

void printShares(const std::vector<ShareRun>& runs) {
    std::printf(
        "2. Share of node wall time spent computing: S=%d x R=1 (one node per stage: on 2 shared cores "
        "more nodes would measure CPU contention), %d s window after a %d s warm-up\n",
        kStages, kShareWindowS, kWarmupS);
    std::printf(
        "   flow: wN = --window N; sync = synchronous steps (the default: the window stays within one "
        "step's %d microbatches), async = --pipeline async\n",
        kMicrobatches);
    std::printf("   compute = the node's own compute_share (time inside engine tasks over its 30 s throttle "
                "window); CPU = its process's CPU time / wall time\n"
                "   over the same window (one compute thread: CPU well below compute means the thread waited "
                "for a core inside its tasks)\n");
    std::printf("   %-10s %-11s %5s %6s %9s %7s %7s %10s %11s %11s  %s\n", "link", "flow", "node", "stage",
                "compute", "CPU", "tasks", "tokens/s", "coord. CPU", "link Mbit/s", "load avg after");
    for (const ShareRun& run : runs) {
        const QString mbit =
            run.linkMbitUp + run.linkMbitDown > 0
                ? QStringLiteral("%1/%2").arg(run.linkMbitUp, 0, 'f', 1).arg(run.linkMbitDown, 0, 'f', 1)
                : QStringLiteral("-");
        for (const ShareRow& row : run.rows)
            std::printf("   %-10s %-11s %5d %6d %8.1f%% %6.0f%% %7lld %10.0f %10.0f%% %11s  %s%s\n",
                        qPrintable(run.link), qPrintable(run.flow.name()), row.node, row.stage,
                        100 * row.computeShare, 100 * row.cpuShare, qlonglong(row.tasks), run.tokensPerSecond,
                        100 * run.coordinatorCpu, qPrintable(mbit), qPrintable(run.load),
                        row.tasks == 0 ? "  (no task in the window: compute is stale)" : "");
    }
    std::printf(
        "   link Mbit/s: node->coordinator / coordinator->node through the relay. Target: >= 80%% compute "
        "with the in-flight window on the home link.\n"
        "   compute includes a stage-0 forward recomputed when a step came between its forward and "
        "backward (async only).\n\n");
    std::fflush(stdout);
}

} // namespace tessera::bench
