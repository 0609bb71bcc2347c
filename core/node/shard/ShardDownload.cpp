// SPDX-License-Identifier: Apache-2.0
#include "node/shard/ShardDownload.h"

#include "node/shard/HttpRange.h"
#include "node/shard/ShardProgress.h"

#include <QFileInfo>
#include <QHostAddress>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QRandomGenerator>

#ifdef Q_OS_UNIX
#include <unistd.h>
#endif

namespace tessera::node {

using gpu::ShardManifest;

namespace {

constexpr qint64 kReadPiece = 1 << 20;   // bytes moved from the reply to disk at a time
constexpr qint64 kReplyBuffer = 4 << 20; // what Qt may buffer ahead of us
constexpr qint64 kProgressEveryMs = 100;
constexpr qint64 kMaxErrorBody = 4096;

std::string str(const QString& s) {
    return s.toStdString();
}

bool isLoopback(const QString& host) {
    return host == u"localhost" || QHostAddress(host).isLoopback();
}

} // namespace

ShardDownload::ShardDownload(QNetworkAccessManager* net, QSslConfiguration ssl, QUrl coordinator,
                             ShardManifest manifest, ShardStore store, ShardDownloadOptions options,
                             QObject* parent)
    : QObject(parent)
    , m_net(net)
    , m_ssl(std::move(ssl))
    , m_coordinator(std::move(coordinator))
    , m_manifest(std::move(manifest))
    , m_store(std::move(store))
    , m_options(options) {
    m_rate = TransferRate(m_options.maxBytesPerSecond);
    m_retryTimer.setSingleShot(true);
    m_throttleTimer.setSingleShot(true);
    connect(&m_retryTimer, &QTimer::timeout, this, &ShardDownload::request);
    connect(&m_throttleTimer, &QTimer::timeout, this, &ShardDownload::pump);
    m_clock.start();
}

ShardDownload::~ShardDownload() {
    dropReply();
}

QString ShardDownload::stateName(State state) {
    static const char* const kNames[] = {"idle",      "requesting", "receiving", "waiting to retry",
                                         "verifying", "done",       "failed",    "cancelled"};
    return QLatin1String(kNames[int(state)]);
}

QUrl ShardDownload::fileUrl() const {
    QUrl url = m_coordinator;
    url.setPath(QStringLiteral("/v1/shards/%1/%2/%3")
                    .arg(m_manifest.stage)
                    .arg(m_manifest.version)
                    .arg(QString::fromStdString(m_manifest.file)));
    return url;
}

void ShardDownload::start() {
    if (m_state == State::Requesting || m_state == State::Receiving || m_state == State::Waiting ||
        m_state == State::Verifying)
        return;
    m_state = State::Requesting;
    m_failures = 0;
    m_rate.restart(m_clock.elapsed());
    m_firstResponse = true;
    begin();
}

void ShardDownload::begin() {
    const QString scheme = m_coordinator.scheme();
    if (!(scheme == u"https" || (scheme == u"http" && isLoopback(m_coordinator.host()))))
        return finish(makeError("refusing to download " + m_manifest.file + " from " +
                                str(m_coordinator.toString()) +
                                ": shards come over https (plain http only on loopback)"),
                      State::Failed);
    if (Status s = m_manifest.validate(); !s)
        return finish(s, State::Failed);
    if (Status s = m_store.ensureDir(); !s)
        return finish(s, State::Failed);

    // Already installed (an earlier run finished, or crashed between install steps after it).
    if (m_store.isInstalled(m_manifest)) {
        QFile::remove(m_store.partPathFor(m_manifest));
        QFile::remove(m_store.progressPathFor(m_manifest));
        m_bytes = m_verified = m_resumedFrom = total();
        return finish({}, State::Done);
    }
    if (Status s = openPart(); !s)
        return finish(s, State::Failed);
    if (Status s = m_store.checkFreeSpace(total() - m_bytes); !s) {
        if (m_part.size() == 0)
            m_part.remove(); // leave nothing behind for a download that never began
        m_part.close();
        return finish(makeError("cannot download " + m_manifest.file + ": " + s.message()), State::Failed);
    }
    if (m_bytes == total())
        return finalize(); // a crash after the last chunk verified: nothing left to fetch
    request();
}

// Resumes from the download record when it describes this very file: the .part is cut back to
// the verified prefix (or to what is really there, aligned down to a chunk, if it is shorter).
Status ShardDownload::openPart() {
    m_part.close();
    m_part.setFileName(m_store.partPathFor(m_manifest));
    if (!m_part.open(QIODevice::ReadWrite | QIODevice::Unbuffered))
        return makeError("cannot open " + str(m_part.fileName()) + ": " + str(m_part.errorString()));
    qint64 offset = 0;
    m_etag.clear();
    const QString recordPath = m_store.progressPathFor(m_manifest);
    if (QFileInfo::exists(recordPath)) {
        Result<ShardProgress> record = ShardProgress::load(recordPath);
        if (record && record->sha256 == QString::fromStdString(m_manifest.sha256) &&
            record->fileSize == total() && !record->etag.isEmpty()) {
            const qint64 chunk = qint64(m_manifest.chunkSize);
            offset = std::min<qint64>(record->verifiedBytes, m_part.size());
            if (offset != total())
                offset -= offset % chunk;
            m_etag = record->etag;
        } else {
            // Another version's record under this name, or a damaged one: it cannot be resumed.
            if (!record)
                qWarning("shard download: ignoring %s", record.message().c_str());
            QFile::remove(recordPath);
        }
    }
    if (!m_part.resize(offset) || !m_part.seek(offset))
        return makeError("cannot prepare " + str(m_part.fileName()) + ": " + str(m_part.errorString()));
    m_bytes = m_verified = m_highWater = m_resumedFrom = offset;
    m_chunkHash = Sha256Digest();
    return {};
}

void ShardDownload::request() {
    if (m_state == State::Cancelled || m_state == State::Failed)
        return;
    if (m_bytes > 0 && m_etag.isEmpty())
        restartFromZero(); // nothing to tie the bytes on disk to the server's file
    QNetworkRequest req(fileUrl());
    req.setSslConfiguration(m_ssl);
    req.setTransferTimeout(m_options.stallTimeoutMs);
    // Explicit identity: Qt would otherwise ask for gzip, and ranges of an encoding are not ranges
    // of the file.
    req.setRawHeader("Accept-Encoding", "identity");
    req.setAttribute(QNetworkRequest::CacheLoadControlAttribute, QNetworkRequest::AlwaysNetwork);
    if (m_bytes > 0) {
        req.setRawHeader("Range", "bytes=" + QByteArray::number(m_bytes) + '-');
        req.setRawHeader("If-Range", m_etag.toLatin1());
    }
    m_requestedFrom = m_bytes;
    m_responseAccepted = false;
    m_state = State::Requesting;
    m_reply = m_net->get(req);
    // Bounded: the rest waits in the socket (and the server), so memory stays small and the
    // bandwidth cap is real backpressure rather than a buffer filling up.
    m_reply->setReadBufferSize(
        m_options.maxBytesPerSecond > 0
            ? std::clamp<qint64>(m_options.maxBytesPerSecond / 4, 16 << 10, kReplyBuffer)
            : kReplyBuffer);
    connect(m_reply, &QNetworkReply::readyRead, this, &ShardDownload::onReadyRead);
    connect(m_reply, &QNetworkReply::finished, this, &ShardDownload::pump);
}

void ShardDownload::onReadyRead() {
    if (!m_reply || (m_throttleTimer.isActive()))
        return;
    pump();
}

// Checks the status line and headers once per reply; false after it dealt with the reply.
bool ShardDownload::acceptResponse() {
    const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200 && status != 206)
        return false; // handled with the body once the reply ends
    const QByteArray etag = m_reply->rawHeader("ETag");
    if (status == 206) {
        qint64 first = -1;
        qint64 size = -1;
        if (!parseContentRange(m_reply->rawHeader("Content-Range"), first, size) ||
            first != m_requestedFrom || size != total()) {
            failAttempt("the coordinator answered a range request with Content-Range '" +
                            m_reply->rawHeader("Content-Range").toStdString() + "' (asked for bytes " +
                            std::to_string(m_requestedFrom) + "- of " + std::to_string(total()) + ")",
                        Failure::Retry);
            return false;
        }
    } else {
        // 200 to a range request: the file changed on the server since the record was made
        // (If-Range did not match), so nothing on disk can be spliced with it.
        if (m_requestedFrom > 0)
            restartFromZero();
        const QVariant length = m_reply->header(QNetworkRequest::ContentLengthHeader);
        if (length.isValid() && length.toLongLong() != total()) {
            failAttempt("the coordinator serves " + std::to_string(length.toLongLong()) + " bytes for " +
                            m_manifest.file + ", the manifest says " + std::to_string(total()) +
                            " (a newer version published? fetch the manifest again)",
                        Failure::Fatal);
            return false;
        }
    }
    if (!etag.isEmpty())
        m_etag = QString::fromLatin1(etag);
    if (m_firstResponse) {
        m_resumedFrom = m_bytes;
        m_firstResponse = false;
    }
    m_responseAccepted = true;
    m_state = State::Receiving;
    return true;
}

// Moves bytes from the reply to the .part, at most up to the next chunk boundary at a time, within
// the bandwidth cap; then, once the reply has ended and is drained, decides what comes next.
void ShardDownload::pump() {
    if (!m_reply)
        return;
    if (!m_responseAccepted && m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).isValid() &&
        !acceptResponse()) {
        if (m_reply && m_reply->isFinished())
            onReplyEnded();
        return;
    }
    const qint64 chunk = qint64(m_manifest.chunkSize);
    while (m_reply && m_responseAccepted && m_reply->bytesAvailable() > 0) {
        const qint64 allowed = m_rate.allowance(m_clock.elapsed(), kReadPiece);
        if (allowed == 0) {
            m_throttleTimer.start(m_rate.waitMs());
            return;
        }
        const qint64 toChunkEnd = chunk - m_bytes % chunk;
        const qint64 n = std::min({m_reply->bytesAvailable(), allowed, toChunkEnd, total() - m_bytes});
        if (n <= 0) {
            failAttempt("the coordinator sent more than the manifest's " + std::to_string(total()) + " bytes",
                        Failure::Retry);
            return;
        }
        const QByteArray data = m_reply->read(n);
        // A disk filling up first takes part of a write without an error: the rest then says why.
        for (qint64 written = 0, w = 0; written < data.size(); written += w)
            if ((w = m_part.write(data.constData() + written, data.size() - written)) <= 0)
                return failAttempt("writing " + str(m_part.fileName()) +
                                       " failed: " + str(m_part.errorString()),
                                   Failure::Fatal);
        m_chunkHash.update(data);
        m_bytes += data.size();
        m_rate.record(m_clock.elapsed(), data.size());
        if (m_bytes > m_highWater) {
            m_highWater = m_bytes;
            m_failures = 0; // progress: the connection works, earlier failures no longer count
        }
        if (m_bytes % chunk == 0 || m_bytes == total()) {
            chunkCompleted();
            emitProgress(true);
        } else {
            emitProgress(false);
        }
    }
    if (m_reply && m_reply->isFinished() && m_reply->bytesAvailable() == 0)
        onReplyEnded();
}

void ShardDownload::chunkCompleted() {
    const qint64 chunk = qint64(m_manifest.chunkSize);
    const qint64 index = (m_bytes - 1) / chunk;
    const std::string got = m_chunkHash.finalHex();
    const std::string& expected = m_manifest.chunks[std::size_t(index)];
    if (got != expected) {
        // Cut back to the chunk's start: the verified prefix stays, the bad bytes go.
        const qint64 start = index * chunk;
        m_part.resize(start);
        m_part.seek(start);
        m_bytes = start;
        failAttempt("chunk " + std::to_string(index + 1) + " of " + m_manifest.file +
                        " does not match the manifest (SHA-256 " + got.substr(0, 16) + "…, expected " +
                        expected.substr(0, 16) + "…)",
                    Failure::Refuse);
        return;
    }
    m_verified = m_bytes;
    // The record may only claim bytes that are on disk: fsync the .part before saving it.
    Status s = syncPart();
    if (s)
        s = saveRecord();
    if (!s)
        failAttempt(s.message(), Failure::Fatal);
}

void ShardDownload::onReplyEnded() {
    QNetworkReply* reply = m_reply;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (m_responseAccepted && m_verified == total()) {
        dropReply();
        return finalize();
    }
    if (status == 416) {
        // The verified prefix is not a prefix of what the server has: start over.
        dropReply();
        restartFromZero();
        return failAttempt("the coordinator refused the range (HTTP 416)", Failure::Retry);
    }
    if (status != 0 && status != 200 && status != 206) {
        const QString said = errorText(reply->read(kMaxErrorBody));
        const std::string why = "the coordinator answered HTTP " + std::to_string(status) + " for " +
                                str(fileUrl().toString()) + (said.isEmpty() ? "" : ": " + str(said));
        // 404/410: that version is gone (a newer one published); 4xx is not going to change by
        // retrying; 5xx and 429 may.
        const bool retry = status >= 500 || status == 429 || status == 408;
        return failAttempt(why, retry ? Failure::Retry : Failure::Fatal);
    }
    if (reply->error() == QNetworkReply::SslHandshakeFailedError)
        return failAttempt("TLS: the coordinator's certificate is not trusted (" + str(reply->errorString()) +
                               ")",
                           Failure::Fatal);
    if (reply->error() == QNetworkReply::OperationCanceledError ||
        reply->error() == QNetworkReply::TimeoutError)
        return failAttempt("the connection stalled (no data for " +
                               std::to_string(m_options.stallTimeoutMs / 1000) + " s)",
                           Failure::Retry);
    if (reply->error() != QNetworkReply::NoError && !m_responseAccepted)
        return failAttempt(str(reply->errorString()), Failure::Retry);
    if (reply->error() != QNetworkReply::NoError)
        return failAttempt("the connection dropped at byte " + std::to_string(m_bytes) + " of " +
                               std::to_string(total()) + " (" + str(reply->errorString()) + ")",
                           Failure::Retry);
    failAttempt("the coordinator ended the transfer at byte " + std::to_string(m_bytes) + " of " +
                    std::to_string(total()),
                Failure::Retry);
}

// One attempt failed. Retry (a network error or a bad chunk) after a backoff, unless maxRetries
// attempts in a row made no progress; Fatal stops now. The verified prefix is kept either way.
void ShardDownload::failAttempt(const std::string& why, Failure kind) {
    dropReply();
    if (kind != Failure::Fatal && ++m_failures <= m_options.maxRetries) {
        qInfo("shard download: %s; retry %d of %d", why.c_str(), m_failures, m_options.maxRetries);
        (void)saveRecord();
        m_state = State::Waiting;
        const qint64 base = std::min<qint64>(m_options.maxRetryDelayMs, qint64(m_options.firstRetryDelayMs)
                                                                            << std::min(m_failures - 1, 20));
        m_retryTimer.start(int(base / 2 + QRandomGenerator::global()->bounded(base / 2 + 1)));
        return;
    }
    if (kind == Failure::Refuse)
        return finish(makeError(why + ": refusing the shard"), State::Failed);
    finish(makeError(stopMessage(why)), State::Failed);
}

std::string ShardDownload::stopMessage(const std::string& why) const {
    std::string text =
        "downloading " + m_manifest.file + " from " + str(m_coordinator.toString()) + " failed: " + why;
    if (m_failures > 1)
        text += " (" + std::to_string(m_failures) + " attempts)";
    if (m_verified > 0)
        text += "; the verified " + str(ShardStore::formatBytes(m_verified)) + " of " +
                str(ShardStore::formatBytes(total())) + " are kept and the next start resumes there";
    return text;
}

void ShardDownload::restartFromZero() {
    m_part.resize(0);
    m_part.seek(0);
    m_bytes = m_verified = m_highWater = 0;
    m_chunkHash = Sha256Digest();
    m_etag.clear();
    QFile::remove(m_store.progressPathFor(m_manifest));
}

void ShardDownload::cancel() {
    if (m_state == State::Idle || m_state == State::Done || m_state == State::Failed ||
        m_state == State::Cancelled)
        return;
    dropReply();
    m_retryTimer.stop();
    if (m_state != State::Verifying)
        (void)saveRecord();
    finish(makeError("downloading " + m_manifest.file + " was cancelled"), State::Cancelled);
}

// Every chunk matched as it arrived and is on disk (fsynced before its record was saved): the
// shard is installed without reading it again. The whole-file SHA-256 is checked once, by the
// stage loader (gpu::loadStageShard verifies size, every chunk and the whole hash before a single
// weight changes), so a second full pass here would only double the time to install; a file
// damaged on disk afterwards fails that check and the node fetches it again.
void ShardDownload::finalize() {
    m_state = State::Verifying;
    if (Status s = syncPart(); !s)
        return finish(s, State::Failed);
    (void)saveRecord();
    m_part.close();
    if (QFileInfo(m_store.partPathFor(m_manifest)).size() != total())
        return install(
            makeError("its size on disk is not the manifest's " + std::to_string(total()) + " bytes"));
    install({});
}

void ShardDownload::install(const Status& verified) {
    const QString part = m_store.partPathFor(m_manifest);
    if (!verified) {
        // Each chunk matched yet the file does not: the disk changed it. Nothing of it is trusted.
        QFile::remove(part);
        QFile::remove(m_store.progressPathFor(m_manifest));
        return finish(makeError(m_manifest.file + " failed its final check: " + verified.message() +
                                ": refusing the shard (the next start downloads it again)"),
                      State::Failed);
    }
    if (Status s = m_store.install(m_manifest); !s)
        return finish(s, State::Failed);
    if (m_options.evictOthers) {
        if (Status s = m_store.evictExcept(int(m_manifest.stage), m_manifest.version); !s)
            qWarning("shard download: %s", s.message().c_str());
    }
    finish({}, State::Done);
}

void ShardDownload::finish(Status status, State state) {
    dropReply();
    m_retryTimer.stop();
    m_throttleTimer.stop();
    if (state != State::Done && state != State::Cancelled && m_part.isOpen())
        (void)saveRecord();
    m_part.close();
    m_state = state;
    emitProgress(true);
    // Queued: a caller may delete this object from its slot, and start() never emits directly.
    QMetaObject::invokeMethod(
        this, [this, status] { Q_EMIT finished(status); }, Qt::QueuedConnection);
}

void ShardDownload::dropReply() {
    if (!m_reply)
        return;
    m_throttleTimer.stop();
    QNetworkReply* reply = std::exchange(m_reply, nullptr);
    reply->disconnect(this);
    reply->abort();
    reply->deleteLater();
}

Status ShardDownload::saveRecord() {
    if (m_etag.isEmpty())
        return {}; // no server version to tie the bytes to: a resume could not use it
    ShardProgress p;
    p.url = fileUrl().toString();
    p.etag = m_etag;
    p.verifiedBytes = m_verified;
    p.fileSize = total();
    p.sha256 = QString::fromStdString(m_manifest.sha256);
    p.stage = m_manifest.stage;
    p.version = m_manifest.version;
    return p.save(m_store.progressPathFor(m_manifest));
}

Status ShardDownload::syncPart() {
    if (!m_part.flush())
        return makeError("writing " + str(m_part.fileName()) + " failed: " + str(m_part.errorString()));
#ifdef Q_OS_UNIX
    if (::fsync(m_part.handle()) != 0)
        return makeError("cannot sync " + str(m_part.fileName()) + " to disk");
#endif
    return {};
}

double ShardDownload::rate() const {
    const bool running =
        m_state == State::Receiving || m_state == State::Requesting || m_state == State::Waiting;
    return running ? m_rate.bytesPerSecond(m_clock.elapsed()) : 0;
}

double ShardDownload::etaSeconds() const {
    const double r = rate();
    return r > 0 ? double(total() - m_bytes) / r : -1;
}

void ShardDownload::emitProgress(bool force) {
    const qint64 now = m_clock.elapsed();
    if (!force && m_lastProgressMs >= 0 && now - m_lastProgressMs < kProgressEveryMs)
        return;
    m_lastProgressMs = now;
    Q_EMIT progress(m_bytes, total(), rate());
}

} // namespace tessera::node
