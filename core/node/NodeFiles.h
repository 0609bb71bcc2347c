// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeFiles: what a node keeps in its data dir, and small JSON records written atomically.
//
//   node.key          Ed25519 identity (0600)          ledger.sqlite   credit receipts
//   coordinator.json  the pinned coordinator key        shards/         stage shards, downloads
//   session.json      admission: node id, token, stage  node.log[.1-3]  the log, rotated
//                     (0600; the stage follows a reassign)
//   bench.json        cached benchmark + hardware key   control.sock / control.token
//   refusal.json      why the last run was refused for good (its kind and words), for the
//                     desktop app; removed when a run starts

#include "base/Result.h"
#include "protocol/Refusal.h"

#include <QJsonObject>
#include <QString>

#include <optional>

namespace tessera::node {

class NodeFiles final {
public:
    explicit NodeFiles(QString dataDir)
        : m_dir(std::move(dataDir)) {}

    // QStandardPaths' app-data location for tessera-node (e.g. ~/.local/share/tessera/node).
    static QString defaultDataDir();
    // Creates the dir (0700: it holds keys and tokens).
    Status ensureExists() const;

    const QString& dir() const { return m_dir; }
    QString path(const QString& name) const;
    QString keyPath() const { return path(QStringLiteral("node.key")); }
    QString shardDir() const { return path(QStringLiteral("shards")); }
    QString ledgerPath() const { return path(QStringLiteral("ledger.sqlite")); }
    QString logPath() const { return path(QStringLiteral("node.log")); }

    // nullopt-like empty object when absent; an error when present but unreadable or not JSON.
    Result<QJsonObject> read(const QString& name) const;
    // temp file, fsync, rename; owner-only when `secret`.
    Status write(const QString& name, const QJsonObject& record, bool secret = false) const;
    Status remove(const QString& name) const;

    // The refusal a node records before it exits refused, and the app reads afterwards.
    Status writeRefusal(const protocol::Refusal& refusal) const;
    std::optional<protocol::Refusal> readRefusal() const;
    static QString refusalFile() { return QStringLiteral("refusal.json"); }
    // The coordinator's last word on the node's credit in escrow (pending, forfeited), as the node
    // status shows it: written by the running node, read by `tessera-node ledger`.
    static QString escrowFile() { return QStringLiteral("escrow.json"); }

private:
    QString m_dir;
};

} // namespace tessera::node
