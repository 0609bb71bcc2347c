// SPDX-License-Identifier: Apache-2.0
#pragma once
// SyntheticNode (benchmarks only): one node's /v1/session without an engine. It answers every task
// after a modelled delay with a result the coordinator's checks accept: a real codec frame of the
// microbatch's shape, made once per stage by the run's own codec, with the task's token ids written
// into it (an activation must carry the microbatch's ids); a loss for the last stage; a step_done
// for each step; a sync_done for each chunk of a ghost sync. Nothing is computed, so one process
// can stand for many nodes' compute while the real coordinator does all of its own work: TLS,
// frame checks (CRC, codec decode, token ids, statistics), routing, relaying, steps and credits.
//
// A synthetic node answers each task on its own timer (tasks overlap): it stands for as much
// compute as the router sends it, so the coordinator, not the node, is what runs out.

#include "base/ModelConfig.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QNetworkRequest>
#include <QObject>
#include <QSslConfiguration>
#include <QWebSocket>

#include <memory>
#include <vector>

namespace tessera::bench {

// Per stage, the frames a synthetic node sends back: an activation (token ids to be overwritten at
// its end) and a gradient, each a real codec payload for one [batch, seq] microbatch.
struct StageFrames {
    QByteArray activation;
    QByteArray gradient;
};

struct SyntheticFrames {
    std::vector<StageFrames> stages; // distinct per stage: no stage's output is its input sent back
    int tokenBytes = 0;              // of an activation's ids, at the end of its payload
    qint64 tokens = 0;               // batch · seq
    int vocab = 0;
    int maxSeqLen = 0;
};

// Encodes seeded activations and gradients of plausible size (RMS ~1) with the run's codec.
SyntheticFrames makeSyntheticFrames(const gpu::ModelConfig& config, int batch, int seq);

// What every synthetic node counts, for the benchmark's window.
struct SyntheticCounters {
    qint64 tasks = 0;
    qint64 forwards = 0; // forward and forward_backward: one per stage per microbatch
    qint64 bytesIn = 0;  // binary messages received (tasks, sync chunks)
    qint64 bytesOut = 0; // binary messages sent (results)
    qint64 steps = 0;
    qint64 refusals = 0; // error notices the coordinator sent
    qint64 closed = 0;   // sessions the coordinator (or the network) closed
    qint64 lastStageForwards = 0;
};

struct SyntheticDelays {
    int forwardMs = 140;  // one 8b stage's forward of 4,096 tokens on an H200 (BENCHMARKS, GPU)
    int backwardMs = 250; // its backward (recomputing its blocks)
};

// (No Q_OBJECT: it has no signals; the benchmarks' folder runs no moc.)
class SyntheticNode final : public QObject {
public:
    SyntheticNode(const SyntheticFrames& frames, SyntheticDelays delays, SyntheticCounters& counters,
                  int stage, int stages, qint64 version);

    // Opens wss /v1/session with the admission's token; sends `ready` once it is open.
    void open(const QUrl& url, const QSslConfiguration& ssl, const QString& token);
    bool isOpen() const { return m_socket.state() == QAbstractSocket::ConnectedState; }
    int stage() const { return m_stage; }

private:
    void onText(const QString& text);
    void onBinary(const QByteArray& message);
    void sendLater(int delayMs, QByteArray message);

    const SyntheticFrames& m_frames;
    SyntheticDelays m_delays;
    SyntheticCounters& m_counters;
    int m_stage;
    int m_stages;
    qint64 m_version;
    int m_microbatchesSinceStep = 0;
    QWebSocket m_socket;
};

} // namespace tessera::bench
