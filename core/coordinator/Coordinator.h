// SPDX-License-Identifier: Apache-2.0
#pragma once
// Coordinator: the running control plane — run, database, key, TLS and the /v1 HTTP API —
// assembled from CoordinatorOptions. Lives on the thread that started it (the SQL connection's).

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
    // Creates the data dir, coordinator key (dataDir/coordinator.key), TLS certificate
    // (dataDir/tls.crt + tls.key unless given), database and, on the first start, the run
    // (see CoordinatorRun); then listens. Refuses plain HTTP unless insecureLoopback is set
    // and the listen address is loopback. Every error says what to change.
    static Result<std::unique_ptr<Coordinator>> start(const CoordinatorOptions& options);
    ~Coordinator();
    Coordinator(const Coordinator&) = delete;
    Coordinator& operator=(const Coordinator&) = delete;

    // A clean stop: stops listening, closes every session with 1001 and marks its node offline,
    // waits (at most a couple of seconds) for the peers to take the close frames, closes the
    // database, then calls done. Later calls do nothing.
    void stop(std::function<void()> done);

    quint16 port() const;
    QString url() const; // "https://127.0.0.1:8443"
    bool tls() const { return !m_tlsFingerprint.isEmpty(); }
    QString tlsFingerprint() const { return m_tlsFingerprint; } // "AB:CD:..." ; empty without TLS
    QString tlsCertPath() const { return m_tlsCertPath; }
    QString coordinatorKey() const; // base64url Ed25519 public key
    const gpu::ModelConfig& model() const;
    QString dataset() const; // the run's DatasetSpec, normalised
    bool runCreated() const; // this start created the run's initial shards
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
