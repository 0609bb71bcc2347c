// SPDX-License-Identifier: Apache-2.0
#pragma once
// SmallFilesystem: a real filesystem that fills up — a tmpfs of a given size mounted on a
// temporary directory — for the disk-full (ENOSPC) tests. Mounting needs root (CI runs as root)
// or a user and mount namespace: reexecUnsharedIfNeeded() restarts a test program under
// `unshare --user --map-root-user --mount` when it is not root. When neither works, mount() says
// so in words and the test fails; it never passes without having filled a disk.

#include "base/Result.h"

#include <QString>
#include <QTemporaryDir>

namespace tessera::test {

class SmallFilesystem final {
public:
    SmallFilesystem();
    ~SmallFilesystem(); // unmounts
    SmallFilesystem(const SmallFilesystem&) = delete;
    SmallFilesystem& operator=(const SmallFilesystem&) = delete;

    // In main(), before anything else: not root → exec this program again under unshare (once).
    static void reexecUnsharedIfNeeded(int argc, char** argv);

    // Mounts a tmpfs of `bytes` (rounded up to pages) on path().
    Status mount(qint64 bytes);
    // Grows or shrinks it in place (files stay).
    Status resize(qint64 bytes);
    const QString& path() const { return m_path; }
    qint64 freeBytes() const;

    // Takes every free byte with a filler file (written until the filesystem says ENOSPC);
    // returns how many bytes it took.
    Result<qint64> fill();
    // Removes the filler: the space returns.
    void unfill();

private:
    QTemporaryDir m_dir;
    QString m_path;
    bool m_mounted = false;
};

} // namespace tessera::test
