// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeCommandLine: tessera-node's commands and options, parsed and dispatched. main() only
// builds the QCoreApplication and calls run().

#include <QStringList>

#include <iosfwd>

namespace tessera::node {

class NodeCommandLine final {
public:
    NodeCommandLine(std::ostream& out, std::ostream& err);
    // Returns the process exit code: 0 success, 1 failure, 2 usage error.
    int run(const QStringList& arguments);

private:
    int runBench(const QStringList& arguments);
    int runShard(const QStringList& arguments);
    int runLedger(const QStringList& arguments);
    int usageError(const QString& message);
    QString usage() const;

    std::ostream& m_out;
    std::ostream& m_err;
};

} // namespace tessera::node
