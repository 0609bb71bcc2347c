// SPDX-License-Identifier: Apache-2.0
#include "coordinator/RunPreparation.h"

#include "common/WallClock.h"
#include "coordinator/CoordinatorRun.h"

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

RunPreparation::RunPreparation(CoordinatorRun& run, Database& db, const Identity& key, QObject* parent)
    : QObject(parent)
    , m_run(run)
    , m_db(db)
    , m_key(key) {
    qInfo("coordinator: creating the run: writing the initial shards of %d stages (%lld parameters) to %s",
          run.config().stages, qlonglong(run.config().parameterCount()), qPrintable(run.shardDir()));
    m_elapsed.start();
    // The writer sees copies and the progress only: the database and the key stay on this thread.
    m_thread.reset(QThread::create([this, config = run.config(), dir = run.shardDir().toStdString()] {
        m_written = gpu::writeInitialShards(config, dir, CoordinatorRun::kInitialVersion, &m_progress);
    }));
    m_thread->setObjectName(QStringLiteral("initial shards"));
    // Queued: the thread's finished() is emitted on the writer thread, delivered on this one.
    connect(m_thread.get(), &QThread::finished, this, &RunPreparation::writerReturned, Qt::QueuedConnection);
    m_thread->start(QThread::LowPriority);
}

RunPreparation::~RunPreparation() {
    m_progress.cancel = true;
    m_thread->wait();
}

void RunPreparation::cancel() {
    if (m_state == State::Writing)
        m_progress.cancel = true;
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
    finish(State::Done, {});
}

void RunPreparation::finish(State state, Status outcome) {
    m_state = state;
    m_outcome = std::move(outcome);
    Q_EMIT finished();
}

double RunPreparation::percent() const {
    const qint64 total = m_progress.bytesTotal.load();
    if (total <= 0)
        return 0;
    return std::clamp(100.0 * double(m_progress.bytesWritten.load()) / double(total), 0.0, 100.0);
}

int RunPreparation::retryAfterSeconds() const {
    const qint64 total = m_progress.bytesTotal.load();
    const qint64 written = m_progress.bytesWritten.load();
    if (total <= 0 || written <= 0)
        return int(kUnknownRetrySeconds);
    const double left = double(elapsedMs()) / 1000 * double(total - written) / double(written);
    return int(std::clamp(qint64(std::ceil(left)), kMinRetrySeconds, kMaxRetrySeconds));
}

QJsonObject RunPreparation::progressJson() const {
    return QJsonObject{
        {QStringLiteral("bytes_written"), qint64(m_progress.bytesWritten.load())},
        {QStringLiteral("bytes_total"), qint64(m_progress.bytesTotal.load())},
        {QStringLiteral("percent"), std::floor(percent() * 10) / 10},
        {QStringLiteral("elapsed_s"), elapsedMs() / 1000},
    };
}

http::HttpResponse RunPreparation::unavailable() const {
    const int retryAfter = retryAfterSeconds();
    const QString error =
        QStringLiteral(
            "the coordinator is preparing this run's initial weights (%1% written); try again in %2 s")
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
