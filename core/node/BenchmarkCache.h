// SPDX-License-Identifier: Apache-2.0
#pragma once
// BenchmarkCache: the measured throughput a node claims at admission, re-measured only when the
// hardware (device, memory, driver) or the client version changes.

#include "base/Result.h"

#include <QJsonObject>
#include <QString>

namespace tessera::node {

class NodeFiles;

struct HardwareClaims {
    QJsonObject hardware; // {device, name, memory_bytes}: what admission signs
    QJsonObject bench;    // {gflops, dtype[, memory_gbps]}
    bool fromCache = false;
};

// The device's identity: what must match for a cached benchmark to stand. Cheap (discovery only).
struct HardwareProbe {
    QJsonObject hardware;
    QString fingerprint;
};
Result<HardwareProbe> probeHardware(const QString& device /* "cpu" or "cuda:N" */);

// Blocking (seconds): call it off the GUI/event thread. seconds: the benchmark's budget.
Result<HardwareClaims> benchmarkOrCached(const NodeFiles& files, const QString& device, double seconds);

} // namespace tessera::node
