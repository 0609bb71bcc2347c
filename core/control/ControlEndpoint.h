// SPDX-License-Identifier: Apache-2.0
#pragma once
// ControlEndpoint: where a data directory's control socket and token live, and the token file itself.

#include "base/Result.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace tessera::node {

class ControlEndpoint final {
public:
    // One request or reply line, its newline not counted.
    static constexpr qsizetype kMaxMessageBytes = 1024 * 1024;
    static constexpr qsizetype kTokenHexChars = 32; // 128 random bits

    // `dataDir` as the user gave it; paths are built on its canonical form, so every spelling of
    // the same directory (relative, through a symlink) finds the same node.
    explicit ControlEndpoint(const QString& dataDir);

    const QString& dataDir() const { return m_dataDir; }
    QString canonicalDataDir() const { return m_canonicalDir; }

    // <dataDir>/control.sock, or, when that path does not fit a unix socket address,
    // <private socket dir>/tessera-node-<16 hex of SHA-256 of the canonical data dir>.sock, in
    // PrivateSocketDir ($XDG_RUNTIME_DIR/tessera, else <tempdir>/tessera-<uid>, 0700).
    QString socketPath() const;
    // The longest socket path QLocalServer accepts: sockaddr_un::sun_path less its NUL, and on
    // Linux less one more byte Qt keeps for abstract names (106 bytes there, not 107).
    static qsizetype maxSocketPathBytes();
    QString tokenPath() const; // <dataDir>/control.token

    // Replaces the token file with a fresh random token. The file is 0600 from its creation
    // and moved into place whole, so no reader ever sees a partial or world-readable token.
    Result<QByteArray> writeNewToken() const;
    // The token, refusing a file that other users could have read or replaced. A missing
    // file reads "no tessera-node is running on DIR (no control token)".
    Result<QByteArray> readToken() const;
    // Removes the token file if it still holds `token` (a later node may have replaced it).
    void removeToken(const QByteArray& token) const;

    // Ok when the socket path is free or holds a socket this user owns: a socket another user
    // planted must never receive the token. For the fallback path, also creates its private
    // directory, or says who owns the one that is there.
    Status checkSocketFile() const;

private:
    QString m_dataDir;
    QString m_canonicalDir;
};

} // namespace tessera::node
