// SPDX-License-Identifier: Apache-2.0
#include "coordinator/RunPreparation.h"

#include "common/ThreadPriority.h"
#include "common/WallClock.h"
#include "coordinator/CoordinatorRun.h"
#include "coordinator/training/StageCheckpoints.h"
#include "train/TrainingData.h"

#include <QJsonDocument>
#include <QThread>

#include <algorithm>
#include <cmath>

namespace tessera::coordinator {

namespace {

// Bounds of the Retry-After a node is given: soon enough to find a small run ready, rare enough that
// thousands of waiting nodes cost the coordinator little.
constexpr qint64 kMinRetrySeconds = 5;
constexpr qint64 kMaxRetrySeconds = 60;
// Before the first byte (every stage's layout is being computed) nothing can be estimated.
constexpr qint64 kUnknownRetrySeconds = 30;

} // namespace

RunPreparation::RunPreparation(CoordinatorRun& run, Database& db, const Identity& key, bool newRun,
                               QObject* parent)
    : QObject(parent)
    , m_run(run)
    , m_db(db)
    , m_key(key)
    , m_newRun(newRun) {
    m_elapsed.start();
    // The data is checked in any order (the run's step is read by the trainer, which reorders it).
    m_dataBytesToCheck = gpu::TrainingData::bytesToCheck(run.dataset().toStdString());
    m_dataThread.reset(QThread::create([this, spec = run.dataset().toStdString(), config = run.config()] {
        makeThisThreadBackground();
        m_dataChecked = gpu::TrainingData::open(spec, config.vocabSize, config.seed, config.seed,
                                                [this](std::int64_t bytes) -> Status {
                                                    m_dataBytesChecked += bytes;
                                                    if (m_progress.cancel.load())
                                                        return makeError("stopped");
                                                    return {};
                                                });
    }));
    m_dataThread->setObjectName(QStringLiteral("training data"));
    connect(m_dataThread.get(), &QThread::finished, this, &RunPreparation::dataReturned,
            Qt::QueuedConnection);
    m_dataThread->start();
    if (!newRun) {
        qInfo("coordinator: opening the run: checking every stage's checkpoint in %s against its manifest",
              qPrintable(run.shardDir()));
        // After the caller has connected to finished(): even a failure at once is heard.
        QMetaObject::invokeMethod(
            this, [this] { open(); }, Qt::QueuedConnection);
        m_state = State::Opening;
        return;
    }
    qInfo("coordinator: creating the run: writing the initial shards of %d stages (%lld parameters) to %s",
          run.config().stages, qlonglong(run.config().parameterCount()), qPrintable(run.shardDir()));
    // The writer sees copies and the progress only: the database and the key stay on this thread.
    startWorker(
        [this, config = run.config(), dir = run.shardDir().toStdString()] {
            m_written = gpu::writeInitialShards(config, dir, CoordinatorRun::kInitialVersion, &m_progress);
        },
        QStringLiteral("initial shards"), &RunPreparation::writerReturned);
}

RunPreparation::~RunPreparation() {
    m_progress.cancel = true;
    if (m_thread)
        m_thread->wait();
    m_dataThread->wait();
}

void RunPreparation::startWorker(std::function<void()> work, const QString& name,
                                 void (RunPreparation::*returned)()) {
    if (m_thread)
        m_thread->wait(); // the last worker has returned (its finished() brought us here)
    // In the background (nice), with every thread the work starts: serving comes first.
    m_thread.reset(QThread::create([work = std::move(work)] {
        makeThisThreadBackground();
        work();
    }));
    m_thread->setObjectName(name);
    // Queued: the thread's finished() is emitted on the worker, delivered on this thread.
    connect(m_thread.get(), &QThread::finished, this, returned, Qt::QueuedConnection);
    m_thread->start();
}

void RunPreparation::cancel() {
    if (active())
        m_progress.cancel = true;
}

PreparedRun RunPreparation::takePrepared() {
    return PreparedRun{std::move(m_checkpoints), std::move(m_data)};
}

void RunPreparation::writerReturned() {
    if (m_state != State::Writing || !m_written)
        return;
    Result<std::vector<gpu::ShardManifest>> written = std::move(*m_written);
    m_written.reset();
    if (!written) {
        if (m_progress.cancel.load()) {
            qInfo("coordinator: stopped writing the initial shards; the next start writes them again");
            return finish(State::Cancelled, makeError("the preparation was stopped"));
        }
        const qint64 mib = (m_progress.bytesTotal.load() + (1 << 20) - 1) >> 20;
        return finish(State::Failed,
                      makeError("writing the run's initial shards (" + std::to_string(mib) + " MiB) to " +
                                m_run.shardDir().toStdString() + " failed: " + written.message() +
                                ". Nothing was recorded: fix the cause (free space, "
                                "permissions) and start the coordinator again"));
    }
    // Even when cancelled meanwhile: every shard is written, and recording them spares the next start
    // the whole preparation.
    m_state = State::Recording;
    Status recorded = m_run.publishInitialShards(m_db, m_key, std::move(*written), WallClock::nowMs());
    if (!recorded)
        return finish(State::Failed,
                      makeError("recording the run's initial shards failed: " + recorded.message()));
    qInfo("coordinator: the initial shards are written and recorded (%.1f s)", double(elapsedMs()) / 1000);
    if (m_progress.cancel.load())
        return finish(State::Cancelled, makeError("the preparation was stopped"));
    if (m_dataError)
        return finish(State::Failed,
                      makeError(m_dataError->message() +
                                " (the run's initial shards are written and recorded: the next start only "
                                "checks them)"));
    m_state = State::Opening;
    open();
}

void RunPreparation::open() {
    if (m_state != State::Opening)
        return;
    if (m_progress.cancel.load())
        return finish(State::Cancelled, makeError("the opening was stopped"));
    if (!m_opening)
        m_opening.emplace(m_run.config(), m_run.shardDir());
    // Refusals of the last read are recorded here, and the versions before them named.
    Result<bool> readNeeded = m_opening->next(m_db);
    if (!readNeeded)
        return finish(State::Failed, makeError("opening the run's checkpoints: " + readNeeded.message()));
    if (!*readNeeded) {
        Result<std::unique_ptr<StageCheckpoints>> opened = m_opening->finish(m_db, m_key);
        m_opening.reset();
        if (!opened)
            return finish(State::Failed, makeError("opening the run's checkpoints: " + opened.message()));
        m_checkpoints = std::move(*opened);
        qInfo("coordinator: every stage's checkpoint is verified (%.1f s)", double(elapsedMs()) / 1000);
        if (m_data)
            return finish(State::Done, {});
        m_state = State::Checking;
        qInfo("coordinator: waiting for the training data's check (%lld MiB checked so far)",
              qlonglong(m_dataBytesChecked.load() >> 20));
        return;
    }
    m_readBefore = m_bytesRead.load();
    m_bytesToRead += std::int64_t(m_opening->bytesToRead());
    startWorker(
        [this] {
            m_read = m_opening->read([this](std::uint64_t bytes) -> Status {
                m_bytesRead = m_readBefore + std::int64_t(bytes);
                if (m_progress.cancel.load())
                    return makeError("stopped");
                return {};
            });
        },
        QStringLiteral("checkpoints"), &RunPreparation::readerReturned);
}

void RunPreparation::readerReturned() {
    if (m_state != State::Opening || !m_read)
        return;
    const Status read = std::move(*m_read);
    m_read.reset();
    if (m_progress.cancel.load())
        return finish(State::Cancelled, makeError("the opening was stopped"));
    if (!read)
        return finish(State::Failed, makeError("opening the run's checkpoints: " + read.message()));
    open();
}

void RunPreparation::dataReturned() {
    if (!m_dataChecked)
        return;
    Result<std::unique_ptr<gpu::TrainingData>> checked = std::move(*m_dataChecked);
    m_dataChecked.reset();
    if (!active())
        return;
    if (!checked) {
        if (m_progress.cancel.load()) { // stopped: the writer or the reader ends the preparation
            if (m_state == State::Checking)
                finish(State::Cancelled, makeError("the data check was stopped"));
            return;
        }
        Status error = makeError("the training data: " + checked.message());
        if (m_state == State::Writing) { // recorded first, so that the next start does not write again
            qWarning("coordinator: %s; the initial shards are still written and recorded, then this start "
                     "ends",
                     error.message().c_str());
            m_dataError = std::move(error);
            return;
        }
        m_progress.cancel = true; // the checkpoint reader stops; what it returns is not heard
        return finish(State::Failed, std::move(error));
    }
    m_data = std::move(*checked);
    qInfo("coordinator: the training data is checked (%.1f s): %s", double(elapsedMs()) / 1000,
          m_data->description().c_str());
    if (m_state == State::Checking)
        finish(State::Done, {});
}

void RunPreparation::finish(State state, Status outcome) {
    m_state = state;
    m_outcome = std::move(outcome);
    Q_EMIT finished();
}

double RunPreparation::percent() const {
    // A new run's shards are read back as many bytes as were written.
    const qint64 written = m_progress.bytesTotal.load();
    const qint64 toRead = m_bytesToRead.load() > 0 ? m_bytesToRead.load() : (m_newRun ? written : 0);
    const qint64 dataChecked =
        m_data ? m_dataBytesToCheck : std::min(m_dataBytesChecked.load(), m_dataBytesToCheck);
    const qint64 total = (m_newRun ? written : 0) + toRead + m_dataBytesToCheck;
    if (total <= 0)
        return 0;
    const qint64 done = (m_newRun ? m_progress.bytesWritten.load() : 0) + m_bytesRead.load() + dataChecked;
    return std::clamp(100.0 * double(done) / double(total), 0.0, m_state == State::Done ? 100.0 : 99.9);
}

int RunPreparation::retryAfterSeconds() const {
    const double done = percent();
    if (done <= 0)
        return int(kUnknownRetrySeconds);
    const double left = double(elapsedMs()) / 1000 * (100 - done) / done;
    return int(std::clamp(qint64(std::ceil(left)), kMinRetrySeconds, kMaxRetrySeconds));
}

QJsonObject RunPreparation::progressJson() const {
    const bool writing = m_state == State::Writing || m_state == State::Recording;
    return QJsonObject{
        {QStringLiteral("phase"), writing                      ? QStringLiteral("writing")
                                  : m_state == State::Checking ? QStringLiteral("checking_data")
                                                               : QStringLiteral("opening")},
        {QStringLiteral("bytes_written"), qint64(m_progress.bytesWritten.load())},
        {QStringLiteral("bytes_total"), qint64(m_progress.bytesTotal.load())},
        {QStringLiteral("bytes_read"), qint64(m_bytesRead.load())},
        {QStringLiteral("bytes_to_read"), qint64(m_bytesToRead.load())},
        {QStringLiteral("data_bytes_checked"), qint64(m_dataBytesChecked.load())},
        {QStringLiteral("data_bytes_to_check"), qint64(m_dataBytesToCheck)},
        {QStringLiteral("percent"), std::floor(percent() * 10) / 10},
        {QStringLiteral("elapsed_s"), elapsedMs() / 1000},
    };
}

http::HttpResponse RunPreparation::unavailable() const {
    const int retryAfter = retryAfterSeconds();
    const QString what = m_state == State::Writing || m_state == State::Recording
                             ? QStringLiteral("preparing this run's initial weights")
                         : m_state == State::Checking
                             ? QStringLiteral("checking this run's training data")
                             : QStringLiteral("checking this run's checkpoints against their manifests");
    const QString error = QStringLiteral("the coordinator is %1 (%2% done); try again in %3 s")
                              .arg(what)
                              .arg(int(percent()))
                              .arg(retryAfter);
    http::HttpResponse r = http::HttpResponse::json(
        503, QJsonDocument(QJsonObject{{QStringLiteral("error"), error},
                                       {QStringLiteral("retry_after"), retryAfter},
                                       {QStringLiteral("state"), QStringLiteral("preparing")}}));
    r.headers.set("Retry-After", QByteArray::number(retryAfter));
    return r;
}

} // namespace tessera::coordinator
