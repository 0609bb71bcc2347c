// SPDX-License-Identifier: Apache-2.0
// ShardInstall: the verified shard already here, or downloaded; then the store tidied.
#include "node/shard/ShardInstall.h"

#include "node/shard/ShardStore.h"

namespace tessera::node {

ShardInstall::ShardInstall(QNetworkAccessManager* net, QSslConfiguration ssl, QUrl coordinator,
                           gpu::ShardManifest manifest, ShardStore& store, ShardDownloadOptions options,
                           QObject* parent)
    : QObject(parent)
    , m_net(net)
    , m_ssl(std::move(ssl))
    , m_coordinator(std::move(coordinator))
    , m_manifest(std::move(manifest))
    , m_store(store)
    , m_options(options) {}

ShardInstall::~ShardInstall() = default;

void ShardInstall::start() {
    const std::optional<gpu::ShardManifest> have = m_store.verifiedShard(m_manifest.stage);
    if (have && have->version == m_manifest.version && have->sha256 == m_manifest.sha256) {
        qInfo("node: stage %d version %lld is already here", int(m_manifest.stage), qlonglong(have->version));
        // What a reassign left half-fetched of another stage goes, as after a download.
        if (Status s = m_store.evictExcept(m_manifest.stage, m_manifest.version); !s)
            qWarning("node: %s", s.message().c_str());
        return done();
    }
    // The download evicts the other stages' and versions' files once it installed its own.
    m_options.evictOthers = true;
    m_download = std::make_unique<ShardDownload>(m_net, m_ssl, m_coordinator, m_manifest, m_store, m_options);
    connect(m_download.get(), &ShardDownload::finished, this, [this](const Status& result) {
        if (!result)
            return Q_EMIT finished(result);
        qInfo("node: %s downloaded and verified", m_manifest.file.c_str());
        done();
    });
    m_download->start();
    if (m_download->resumedFrom() > 0)
        qInfo("node: resuming %s at byte %lld of %llu", m_manifest.file.c_str(), qlonglong(m_download->resumedFrom()),
              qulonglong(m_manifest.fileSize));
}

void ShardInstall::done() {
    m_installed = true;
    Q_EMIT finished(Status());
}

void ShardInstall::cancel() {
    if (!m_download)
        return;
    m_download->disconnect(this);
    m_download->cancel();
}

QJsonObject ShardInstall::status() const {
    QJsonObject s{{QStringLiteral("bytes"), m_installed ? qint64(m_manifest.fileSize) : qint64(0)},
                  {QStringLiteral("total"), qint64(m_manifest.fileSize)},
                  {QStringLiteral("file"), QString::fromStdString(m_manifest.file)}};
    if (m_download && !m_installed) {
        s.insert(QStringLiteral("bytes"), m_download->bytes());
        s.insert(QStringLiteral("bytes_per_second"), m_download->rate());
        s.insert(QStringLiteral("eta_s"), m_download->etaSeconds());
    }
    return s;
}

} // namespace tessera::node
