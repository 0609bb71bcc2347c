// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeLog: the node's log lines go to stderr (journald under systemd) and to a size-rotated file
// in the data dir (node.log, node.log.1 … node.log.N), so a volunteer can send it with a report.

#include <QString>

namespace tessera::node {

struct LogSettings {
    QString path;                    // node.log in the data dir
    qint64 maxBytes = 5 * 1024 * 1024; // per file
    int keep = 3;                    // rotated files kept
};

// Installs the Qt message handler for the rest of the process. Thread-safe. A file that cannot
// be opened leaves stderr only, with one warning.
void installNodeLog(const LogSettings& settings);

} // namespace tessera::node
