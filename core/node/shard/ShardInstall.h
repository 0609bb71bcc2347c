// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShardInstall: puts a stage's shard in the store — nothing to do when the verified file of that
// version is there already, else a resumable download (ShardDownload) — and then evicts what other
// stages and versions left behind. One install per manifest; `finished` reports it.

#include "base/Result.h"
#include "base/ShardManifest.h"
#include "node/shard/ShardDownload.h"

#include <QJsonObject>
#include <QObject>
#include <QSslConfiguration>
#include <QUrl>

#include <memory>

class QNetworkAccessManager;

namespace tessera::node {

class ShardStore;

class ShardInstall final : public QObject {
    Q_OBJECT

public:
    ShardInstall(QNetworkAccessManager* net, QSslConfiguration ssl, QUrl coordinator,
                 gpu::ShardManifest manifest, ShardStore& store, ShardDownloadOptions options,
                 QObject* parent = nullptr);
    ~ShardInstall() override;

    void start();
    // Stops a download under way (its verified prefix stays for the next try); nothing is signalled.
    void cancel();

    // {bytes, total, file[, bytes_per_second, eta_s]} for the node's status.
    QJsonObject status() const;

Q_SIGNALS:
    void finished(const tessera::Status& result);

private:
    void done();

    QNetworkAccessManager* m_net;
    QSslConfiguration m_ssl;
    QUrl m_coordinator;
    gpu::ShardManifest m_manifest;
    ShardStore& m_store;
    ShardDownloadOptions m_options;
    std::unique_ptr<ShardDownload> m_download;
    bool m_installed = false;
};

} // namespace tessera::node
