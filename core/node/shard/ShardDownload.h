// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardDownload: fetches one stage shard from the coordinator into the ShardStore — resumable
// (Range + If-Range on the ETag), every chunk hashed as it arrives, the whole file checked before
// it is installed, retried with backoff across a connection that drops.

#include "base/Result.h"
#include "base/ShardManifest.h"
#include "node/shard/Sha256Digest.h"
#include "node/shard/ShardStore.h"
#include "node/shard/TransferRate.h"

#include <QElapsedTimer>
#include <QFile>
#include <QObject>
#include <QSslConfiguration>
#include <QTimer>
#include <QUrl>

#include <memory>

class QNetworkAccessManager;
class QNetworkReply;

namespace tessera::node {

struct ShardDownloadOptions {
    qint64 maxBytesPerSecond = 0; // 0: unlimited; the volunteer's bandwidth cap
    int maxRetries = 5;           // consecutive failed attempts that made no progress
    int firstRetryDelayMs = 1000; // doubles per failure up to maxRetryDelayMs, with jitter
    int maxRetryDelayMs = 30'000;
    int stallTimeoutMs = 60'000; // a connection silent this long is dropped and retried
    bool evictOthers = true;     // once installed, remove other versions and stages
};

// States: Idle → Requesting → Receiving → (Waiting → Requesting …) → Verifying → Done,
// or Failed / Cancelled from any running state. start() again after Failed or Cancelled
// resumes from the verified prefix the download record names.
class ShardDownload final : public QObject {
    Q_OBJECT

public:
    enum class State { Idle, Requesting, Receiving, Waiting, Verifying, Done, Failed, Cancelled };

    // coordinator: https://host:port, or http:// on loopback only. ssl: the node's trust (the
    // coordinator's CA or pinned certificate); no certificate error is ever ignored.
    // manifest: already checked (protocol::parseSignedManifest) by the caller.
    ShardDownload(QNetworkAccessManager* net, QSslConfiguration ssl, QUrl coordinator,
                  gpu::ShardManifest manifest, ShardStore store, ShardDownloadOptions options = {},
                  QObject* parent = nullptr);
    ~ShardDownload() override;

    // Prepares synchronously (record, .part, disk space) and sends the request; the outcome
    // comes through finished(). Ignored while a run is in progress.
    void start();
    // Stops and keeps the verified prefix; finished() reports the cancellation.
    void cancel();

    State state() const { return m_state; }
    static QString stateName(State state);
    qint64 bytes() const { return m_bytes; } // in the .part now
    qint64 total() const { return qint64(m_manifest.fileSize); }
    double rate() const;       // bytes/s over the last few seconds
    double etaSeconds() const; // -1 while the rate is unknown
    // Where this run's bytes began: the verified prefix once start() returns, 0 if the server's
    // file turned out to have changed (a 200 to the range request).
    qint64 resumedFrom() const { return m_resumedFrom; }
    int failures() const { return m_failures; }
    QUrl fileUrl() const;
    const gpu::ShardManifest& manifest() const { return m_manifest; }

Q_SIGNALS:
    void progress(qint64 bytes, qint64 total, double bytesPerSecond);
    // Always emitted once per start(), from the event loop (never from inside start()).
    void finished(tessera::Status status);

private:
    enum class Failure { Retry, Refuse, Fatal };

    void begin();
    Status openPart();
    void request();
    void onReadyRead();
    void pump();
    bool acceptResponse();
    void onReplyEnded();
    void chunkCompleted();
    void failAttempt(const std::string& why, Failure kind);
    void restartFromZero();
    void finalize();
    void install(const Status& verified);
    void finish(Status status, State state);
    void dropReply();
    Status saveRecord();
    Status syncPart();
    void emitProgress(bool force);
    std::string stopMessage(const std::string& why) const;

    QNetworkAccessManager* m_net;
    QSslConfiguration m_ssl;
    QUrl m_coordinator;
    gpu::ShardManifest m_manifest;
    ShardStore m_store;
    ShardDownloadOptions m_options;

    State m_state = State::Idle;
    QFile m_part;
    QNetworkReply* m_reply = nullptr;
    bool m_responseAccepted = false;
    QString m_etag;
    qint64 m_bytes = 0;    // written to the .part
    qint64 m_verified = 0; // chunk-aligned prefix whose hashes matched
    qint64 m_requestedFrom = 0;
    qint64 m_resumedFrom = 0;
    bool m_firstResponse = true;
    qint64 m_highWater = 0; // furthest byte reached this run: passing it resets m_failures
    int m_failures = 0;
    Sha256Digest m_chunkHash; // of the bytes of the current chunk received so far

    QTimer m_retryTimer;
    QTimer m_throttleTimer;
    QElapsedTimer m_clock;
    TransferRate m_rate;
    qint64 m_lastProgressMs = -1;
};

} // namespace tessera::node
