// SPDX-License-Identifier: Apache-2.0
#pragma once
// RunPreparation: what the coordinator does before it serves a run, on worker threads while it
// already answers. A new run's initial shards are written, their signed manifests recorded in the
// database (on its own thread); then — and at once for a restart — every stage's checkpoint is read
// and verified against its manifest (CheckpointOpening: 32 GB at 8b). Beside them from the start,
// on a thread of its own, the training data is checked (a dataset's every shard hashed and every
// token id read: seconds a GB).
//
//   Writing ──(the writer returns its manifests)──→ Recording ──→ Opening ──→ Checking ──→ Done
//      │                                              │          │ ↺ (a damaged version   │
//      │                                              │          │    refused: the one    │
//      │                                              │          │    before it is read)  │
//      ├──(the writer fails: disk full, a permission, …)──┴──────┴───────────────────────┴──→ Failed
//      └──(cancel(): the coordinator stops; also while Opening and Checking)──→ Cancelled
// A restart starts at Opening; Checking (the checkpoints opened, the data check still running) is
// passed at once when the data was checked first. Data that fails its check fails the preparation once
// the initial shards are recorded (a new run is not written twice), at once after that.
//
// Failed and Cancelled while writing record nothing, so the next start finds run.json without
// versions and prepares again (the writer leaves no file but *.tmp ones); while opening they change
// nothing but the refusal of a damaged version. finished() is emitted once, on the thread that made
// the preparation, when it leaves Writing, Recording, Opening and Checking.

#include "base/Result.h"
#include "coordinator/http/HttpResponse.h"
#include "coordinator/training/CheckpointOpening.h"
#include "coordinator/training/PreparedRun.h"
#include "shard/InitialShards.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QThread;

namespace tessera {
class Identity;
}

namespace tessera::coordinator {

class CoordinatorRun;
class Database;
class StageCheckpoints;

class RunPreparation final : public QObject {
    Q_OBJECT

public:
    enum class State { Writing, Recording, Opening, Checking, Done, Failed, Cancelled };

    // Starts at once: writing a new run's shards (`newRun`), or opening a restarted run's
    // checkpoints. run, db and key outlive it; db and key are used on this thread only.
    RunPreparation(CoordinatorRun& run, Database& db, const Identity& key, bool newRun,
                   QObject* parent = nullptr);
    // Cancels and waits for the workers (they stop within one block of a stage, one chunk of a
    // checkpoint or one MiB of data: well under a second).
    ~RunPreparation() override;

    // Asks the worker to stop; finished() follows once it has (Cancelled, or Done if it had
    // already finished).
    void cancel();

    State state() const { return m_state; }
    bool active() const {
        return m_state == State::Writing || m_state == State::Recording || m_state == State::Opening ||
               m_state == State::Checking;
    }
    bool newRun() const { return m_newRun; }
    const Status& outcome() const { return m_outcome; } // the error, in words, when Failed
    qint64 elapsedMs() const { return m_elapsed.elapsed(); }
    // Once Done: the run's checkpoints, opened, and its data, checked (taken once).
    PreparedRun takePrepared();

    // {"phase" (writing, opening or checking_data), "bytes_written", "bytes_total", "bytes_read",
    // "bytes_to_read", "data_bytes_checked", "data_bytes_to_check", "percent", "elapsed_s"}:
    // /v1/status's "preparing". The percent counts writing, reading the checkpoints and checking the
    // data together.
    QJsonObject progressJson() const;
    // 503 + Retry-After {"error", "retry_after", "state": "preparing"}: what admission, shard
    // downloads and session upgrades answer until the run serves.
    http::HttpResponse unavailable() const;
    // Seconds worth waiting before asking again: the estimated time left, 5 to 60 s.
    int retryAfterSeconds() const;
    double percent() const;

Q_SIGNALS:
    void finished();

private:
    void writerReturned();
    void open(); // names the versions to read next, or finishes
    void readerReturned();
    void dataReturned();
    void startWorker(std::function<void()> work, const QString& name, void (RunPreparation::*returned)());
    void finish(State state, Status outcome);

    CoordinatorRun& m_run;
    Database& m_db;
    const Identity& m_key;
    bool m_newRun = false;
    gpu::InitialShardProgress m_progress;       // its cancel stops the reader too
    std::atomic<std::int64_t> m_bytesRead{0};   // by the reads so far
    std::atomic<std::int64_t> m_bytesToRead{0}; // what the reads so far were expected to take
    std::int64_t m_readBefore = 0;              // bytes read by the reads before this one
    // Set by the writer thread before it ends, read here once its finished() is delivered.
    std::optional<Result<std::vector<gpu::ShardManifest>>> m_written;
    std::optional<CheckpointOpening> m_opening; // the reader uses it while Opening's read runs
    std::optional<Status> m_read;               // set by the reader thread before it ends
    std::unique_ptr<StageCheckpoints> m_checkpoints;
    std::unique_ptr<QThread> m_thread;
    // The data check's thread, what it returns (set before it ends), and the data once delivered here.
    std::unique_ptr<QThread> m_dataThread;
    std::atomic<std::int64_t> m_dataBytesChecked{0};
    std::int64_t m_dataBytesToCheck = 0; // what the check reads (0: nothing, or not known before)
    std::optional<Result<std::unique_ptr<gpu::TrainingData>>> m_dataChecked;
    std::unique_ptr<gpu::TrainingData> m_data;
    std::optional<Status> m_dataError; // a failed check, waiting for the shards to be recorded
    QElapsedTimer m_elapsed;
    State m_state = State::Writing;
    Status m_outcome;
};

} // namespace tessera::coordinator
