// SPDX-License-Identifier: Apache-2.0
#pragma once
// RunPreparation: a new run's initial shards written on a worker thread while the coordinator
// already answers, then their signed manifests recorded in the database on its own thread.
//
//   Writing ──(the writer returns its manifests)──→ Recording ──→ Done
//      │                                                └──(the database refuses)──→ Failed
//      ├──(the writer fails: disk full, a permission, …)──→ Failed
//      └──(cancel(): the coordinator stops)──→ Cancelled
//
// Failed and Cancelled record nothing, so the next start finds run.json without versions and
// prepares again (the writer leaves no file but *.tmp ones). finished() is emitted once, on the
// thread that made the preparation, when it leaves Writing and Recording.

#include "base/Result.h"
#include "coordinator/http/HttpResponse.h"
#include "shard/InitialShards.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>

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

class RunPreparation final : public QObject {
    Q_OBJECT

public:
    enum class State { Writing, Recording, Done, Failed, Cancelled };

    // Starts writing at once. run, db and key outlive it; db and key are used on this thread only.
    RunPreparation(CoordinatorRun& run, Database& db, const Identity& key, QObject* parent = nullptr);
    // Cancels and waits for the writer (it stops within one block of a stage: well under a second).
    ~RunPreparation() override;

    // Asks the writer to stop; finished() follows once it has (Cancelled, or Done if it had
    // already written everything).
    void cancel();

    State state() const { return m_state; }
    bool active() const { return m_state == State::Writing || m_state == State::Recording; }
    const Status& outcome() const { return m_outcome; } // the error, in words, when Failed
    qint64 elapsedMs() const { return m_elapsed.elapsed(); }

    // {"bytes_written", "bytes_total", "percent", "elapsed_s"}: /v1/status's "preparing".
    QJsonObject progressJson() const;
    // 503 + Retry-After {"error", "retry_after", "state": "preparing"}: what admission, shard
    // downloads and session upgrades answer while the run is prepared.
    http::HttpResponse unavailable() const;
    // Seconds worth waiting before asking again: the estimated time left, 5 to 60 s.
    int retryAfterSeconds() const;
    double percent() const;

Q_SIGNALS:
    void finished();

private:
    void writerReturned();
    void finish(State state, Status outcome);

    CoordinatorRun& m_run;
    Database& m_db;
    const Identity& m_key;
    gpu::InitialShardProgress m_progress;
    // Set by the writer thread before it ends, read here once its finished() is delivered.
    std::optional<Result<std::vector<gpu::ShardManifest>>> m_written;
    std::unique_ptr<QThread> m_thread;
    QElapsedTimer m_elapsed;
    State m_state = State::Writing;
    Status m_outcome;
};

} // namespace tessera::coordinator
