// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeStatusText: the node's status JSON (Node::status()) in plain words for the wizard and the
// dashboard — the benchmark's result, the stage held, the waitlist, the download, a refusal.

#include "protocol/Refusal.h"

#include <QCoreApplication>
#include <QJsonObject>
#include <QString>

namespace tessera::manager {

class NodeStatusText final {
    Q_DECLARE_TR_FUNCTIONS(NodeStatusText)

public:
    // "Your NVIDIA GeForce RTX 4070: about 29 TFLOP/s in bf16" / "Your CPU (AMD Ryzen 7 5800X):
    // about 0.15 TFLOP/s in fp32"; empty until the node has measured.
    static QString benchmark(const QJsonObject& status);
    // Whether the node computes on the CPU (what it measured, else its device).
    static bool onCpu(const QJsonObject& status);
    // "No NVIDIA GPU found — contributing with the CPU" when the node fell back to the CPU by itself
    // (deviceSetting empty: "the first CUDA GPU, else the CPU"); empty otherwise.
    static QString cpuFallback(const QJsonObject& status, const QString& deviceSetting);
    // The benchmark's progress 0..1 while it runs (elapsed over budget); -1 when unknown.
    static double benchmarkProgress(const QJsonObject& status);
    // "You hold stage 2 of 7 of the model" (the node counts stages from 0, people from 1). The
    // stage count comes from the node, else the swarm's status; empty before admission.
    static QString stage(const QJsonObject& status, const QJsonObject& swarm = {});
    static int stageCount(const QJsonObject& status, const QJsonObject& swarm = {});
    // The first stage (from 0) but `mine` the coordinator's status lists with nobody online; -1:
    // none, or no status. (Its status may be older than this node's arrival in its own stage.)
    static int emptyStage(const QJsonObject& swarm, int mine);
    // "The swarm is full right now. Tessera will try again in 4 minutes — you can close this window.",
    // or, while the coordinator's /v1/status (swarm) says its new run is "preparing", that it is.
    static QString waitlist(const QJsonObject& status, const QJsonObject& swarm = {});
    // The percentage of a new run's initial weights written, while the coordinator prepares them; else -1.
    static int preparingPercent(const QJsonObject& swarm);
    // "12.5 MB of 48.0 MB · 3.2 MB/s · about 2 minutes left"; progress 0..1, -1 before the size is known.
    static QString download(const QJsonObject& status);
    static double downloadProgress(const QJsonObject& status);
    // What a person can do about a refusal, from the node's own message.
    static QString refusalAdvice(protocol::RefusalKind why);

    // Credits as people read them: "0", "0.0012" (a small node's first hour), "3.75", "1,234".
    static QString credits(double value);
    static QString tflops(double value);     // "29", "2.3", "0.15"
    static QString duration(double seconds); // "45 seconds", "4 minutes", "2 hours"
    static QString megabytes(double bytes);  // "12.5 MB"
};

} // namespace tessera::manager
