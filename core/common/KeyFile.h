// SPDX-License-Identifier: Apache-2.0
#pragma once
// KeyFile: reads and writes files that hold a private key: owner-only from creation, atomic, checked on read.

#include "base/Result.h"

#include <QByteArray>
#include <QString>

namespace tessera {

class KeyFile final {
public:
    enum class Readers {
        OwnerOnly,    // refuse a file any other user may access (node and coordinator identity)
        OwnerOrGroup, // also accept group access: Debian keeps TLS keys 0640 root:ssl-cert
    };

    // Writes `secret` to a new file at `path`: a temporary file in the same directory created
    // 0600 (whatever the umask), fsync'd, then moved into place. Fails when `path` exists, so
    // two processes starting at once never overwrite each other's key. Creates missing parent
    // directories.
    static Status writeNew(const QString& path, const QByteArray& secret);
    // Like writeNew, but swaps the new file in over an existing one (rename): for secrets that
    // are renewed, such as a node's control token. Readers see the old file or the new, whole.
    static Status replace(const QString& path, const QByteArray& secret);

    // Reads a key file of at most 64 KiB, refusing one that other users can read, with a
    // message that names the file and the fix.
    static Result<QByteArray> read(const QString& path, Readers readers = Readers::OwnerOnly);

private:
    static Status write(const QString& path, const QByteArray& secret, bool overwrite);
};

} // namespace tessera
