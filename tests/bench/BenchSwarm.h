// SPDX-License-Identifier: Apache-2.0
#pragma once
// What bench_swarm's tables share: the swarm's shape, the coordinator's arguments, waiting for a
// step, and the compute-share runs (table 2, in bench_swarm_shares.cpp).
#include "DelayRelay.h"
#include "LocalSwarm.h"
#include "ProcessStats.h"
#include "SimulatorReference.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QThread>
#include <QUrl>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <vector>

namespace tessera::bench {

constexpr int kStages = 2;
constexpr int kMicrobatches = 8, kBatch = 8, kSeq = 64;
constexpr qint64 kTokensPerStep = qint64(kMicrobatches) * kBatch * kSeq;
constexpr int kAveragingInterval = 20, kPartitions = 20;
constexpr int kShareWindowS = 30; // the node's compute_share is over its throttle's 30 s window
constexpr int kWarmupS = 10;      // after step 2: probes answered, EMAs settled
constexpr int kChurnEveryS = 10;
constexpr DelayRelay::Link kHomeLink{std::chrono::milliseconds(50), 100e6};

// How microbatches flow: the coordinator's --window, and --pipeline async (the next step's
// microbatches start while a step finishes and its update is exchanged) or sync.
struct Flow {
    Flow(int w = 8, bool a = false, int mb = kMicrobatches, QStringList x = {}, QString t = {})
        : window(w)
        , async(a)
        , microbatches(mb)
        , extra(std::move(x))
        , tag(std::move(t)) {}

    int window = 8;
    bool async = false;
    int microbatches = kMicrobatches; // per step (a bigger global batch pays the bubble less often)
    QStringList extra;                // more coordinator options (the gradient exchange's)
    QString tag;                      // what `extra` is, in the row's name
    QString name() const {
        QString n = QStringLiteral("w%1 %2").arg(window).arg(async ? QStringLiteral("async")
                                                                   : QStringLiteral("sync"));
        if (microbatches != kMicrobatches)
            n += QStringLiteral(" b%1").arg(microbatches);
        if (!tag.isEmpty())
            n += u' ' + tag;
        return n;
    }
};

inline QStringList coordinatorArguments(Flow flow, int maxSteps) {
    QStringList a{QStringLiteral("--model"),
                  QStringLiteral("tiny"),
                  QStringLiteral("--stages"),
                  QString::number(kStages),
                  QStringLiteral("--codec"),
                  QStringLiteral("subspace"),
                  QStringLiteral("--batch"),
                  QString::number(kBatch),
                  QStringLiteral("--seq"),
                  QString::number(kSeq),
                  QStringLiteral("--microbatches-per-step"),
                  QString::number(flow.microbatches),
                  QStringLiteral("--window"),
                  QString::number(flow.window),
                  QStringLiteral("--averaging-interval"),
                  QString::number(kAveragingInterval),
                  QStringLiteral("--averaging-partitions"),
                  QString::number(kPartitions)};
    a << QStringLiteral("--pipeline") << (flow.async ? QStringLiteral("async") : QStringLiteral("sync"));
    a << flow.extra;
    if (maxSteps > 0)
        a << QStringLiteral("--max-steps") << QString::number(maxSteps);
    return a;
}

inline QString loadAverage() {
    QFile f(QStringLiteral("/proc/loadavg"));
    if (!f.open(QIODevice::ReadOnly))
        return QStringLiteral("?");
    return QString::fromLatin1(f.readAll()).section(u' ', 0, 2);
}

inline void note(const QString& text) {
    std::fprintf(stderr, "%s\n", qPrintable(text));
    std::fflush(stderr);
}

// Until the coordinator's step reaches `step`; false after timeoutMs.
inline bool waitStep(LocalSwarm& swarm, qint64 step, int timeoutMs) {
    QElapsedTimer waited;
    waited.start();
    qint64 lastReport = 0;
    while (waited.elapsed() < timeoutMs) {
        const qint64 now = swarm.get(QStringLiteral("/v1/status")).value(u"step").toInteger(-1);
        if (now >= step)
            return true;
        if (waited.elapsed() - lastReport > 20'000) {
            lastReport = waited.elapsed();
            std::fprintf(stderr, "  ... step %lld of %lld (%.0f s)\n", qlonglong(now), qlonglong(step),
                         double(waited.elapsed()) / 1000);
        }
        sleepWithEvents(1000);
    }
    return false;
}

inline bool startCoordinator(LocalSwarm& swarm) {
    const QString error = swarm.start();
    if (!error.isEmpty())
        note(error);
    return error.isEmpty();
}

// Starts `nodes` fresh nodes reaching the coordinator at nodeUrl (empty: directly) and waits until
// they all work and the swarm has made two steps.
// More than 8 start 8 at a time, each group working before the next starts: every node's start-up
// benchmark takes ~0.7 GiB for a moment, and 50 at once exhaust a 24 GiB machine.
inline bool addNodesAndWait(LocalSwarm& swarm, int nodes, const QString& nodeUrl = {}) {
    constexpr int kGroup = 8;
    bool working = true;
    for (int started = 0; started < nodes && working;) {
        const int group = std::min(kGroup, nodes - started);
        for (int i = 0; i < group; ++i)
            swarm.addNode(nodeUrl);
        started += group;
        working = swarm.waitWorking(started, 300'000);
    }
    if (working && waitStep(swarm, 2, 300'000))
        return true;
    note(QStringLiteral("the swarm did not start training; see ") + swarm.coordinatorLog());
    return false;
}

// --- Compute share (table 2) ---

struct ShareRow {
    int node = 0;
    int stage = -1;
    double computeShare = 0; // the node's own figure over its 30 s window
    double cpuShare = 0;     // its process's CPU time / wall time over the same window
    qint64 tasks = 0;
};

struct ShareRun {
    QString link;
    Flow flow;
    std::vector<ShareRow> rows;
    double tokensPerSecond = 0;
    double coordinatorCpu = 0;
    double linkMbitUp = 0, linkMbitDown = 0; // through the relay, when there is one
    QString load;
};

// Warm-up, then one window of kShareWindowS seconds over every running node.
// Warm-up, then one window of kShareWindowS seconds over every running node.
ShareRun measureShares(LocalSwarm& swarm, const QString& link, Flow flow, const DelayRelay* relay);
// A fresh S=2 x R=1 swarm for one configuration, measured once it trains; nullopt when it did not.
std::optional<ShareRun> shareRun(const QString& dir, const QString& link, Flow flow, bool relayed);
void printShares(const std::vector<ShareRun>& runs);

} // namespace tessera::bench
