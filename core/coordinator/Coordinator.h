// SPDX-License-Identifier: Apache-2.0
#pragma once
// Coordinator: the running control plane — run, database, key, TLS and the /v1 HTTP API —
// assembled from CoordinatorOptions. Lives on the thread that started it (the SQL connection's).
//
//   Preparing ──(a new run's initial shards written and recorded; every stage's checkpoint read and
//       │        verified; the trainer built)──→ Serving
//       └──(the writer, the reading or the trainer failed: onPrepared gets the error)
//
// Every start listens at once and prepares on worker threads (RunPreparation): a new run (or one
// whose first start stopped before its shards were recorded) writes its initial shards first; then
// every stage's checkpoint is read and checked against its manifest (over a minute at 8b).
// Meanwhile /v1/info, /v1/status (state "preparing", the phase and the bytes done), the operator's
// page, credits and the leaderboard answer; admission, its challenge, shard downloads and the
// /v1/session upgrade answer 503 with Retry-After.

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "coordinator/CoordinatorOptions.h"

#include <QHostAddress>
#include <QString>

#include <functional>
#include <memory>

namespace tessera::coordinator {

class Database;

class Coordinator final {
public:
    enum class State { Preparing, Serving };

    // Creates the data dir, coordinator key (dataDir/coordinator.key), TLS certificate
    // (dataDir/tls.crt + tls.key unless given), database and, on the first start, the run
    // (see CoordinatorRun); then listens, Preparing while the run's initial shards are written and
    // its checkpoints read. Refuses plain HTTP unless insecureLoopback is set and the listen address is
    // loopback. Every error says what to change.
    static Result<std::unique_ptr<Coordinator>> start(const CoordinatorOptions& options);
    ~Coordinator();
    Coordinator(const Coordinator&) = delete;
    Coordinator& operator=(const Coordinator&) = delete;

    // A clean stop: stops listening, closes every session with 1001 and marks its node offline,
    // waits (at most a couple of seconds) for the peers to take the close frames, closes the
    // database, then calls done. Later calls do nothing. While Preparing it cancels the writer or
    // reader and waits for it (a second or so) instead: nothing is recorded, the next start
    // prepares again.
    void stop(std::function<void()> done);

    State state() const;
    // Called once, on this thread, when a Preparing coordinator is Serving (an ok Status) or could
    // not be prepared (the error, in words: then stop it). Never called after stop().
    void onPrepared(std::function<void(const Status&)> prepared);

    quint16 port() const;
    QString url() const; // "https://127.0.0.1:8443"
    bool tls() const { return !m_tlsFingerprint.isEmpty(); }
    QString tlsFingerprint() const { return m_tlsFingerprint; } // "AB:CD:..." ; empty without TLS
    QString tlsCertPath() const { return m_tlsCertPath; }
    QString coordinatorKey() const; // base64url Ed25519 public key
    const gpu::ModelConfig& model() const;
    QString dataset() const; // the run's DatasetSpec, normalised
    bool runCreated() const; // this start writes the run's initial shards (it started Preparing)
    QString databaseName() const;

private:
    struct Parts;
    Coordinator();

    std::unique_ptr<Parts> m_parts;
    QString m_tlsFingerprint;
    QString m_tlsCertPath;
};

struct ListenAddress {
    QHostAddress address;
    quint16 port = 0;
};
// "HOST:PORT", "[v6]:PORT" or "localhost:PORT" → address and port (0 picks a free one).
Result<ListenAddress> parseListenAddress(const QString& text);

} // namespace tessera::coordinator
