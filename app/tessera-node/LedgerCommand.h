// SPDX-License-Identifier: Apache-2.0
#pragma once
// LedgerCommand: `tessera-node ledger verify` and `tessera-node ledger export --csv`, offline,
// on the ledger in the node's data dir.

#include <QString>
#include <QStringList>

#include <iosfwd>

namespace tessera::node {

// arguments: what follows "ledger" ({"verify"}, {"export", "--csv"}). Returns the exit code:
// 0 success, 1 a missing, unreadable or invalid ledger, 2 a usage error.
int runLedgerCommand(const QStringList& arguments, const QString& dataDir, std::ostream& out,
                     std::ostream& err);

} // namespace tessera::node
