// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorCommandLine: tessera-coordinator's options, parsed into CoordinatorOptions; starts
// the Coordinator and runs the event loop. main() only builds the QCoreApplication.

#include "base/Result.h"
#include "coordinator/CoordinatorOptions.h"

#include <QStringList>

#include <iosfwd>
#include <optional>

namespace tessera::coordinator {

class CoordinatorCommandLine final {
public:
    CoordinatorCommandLine(std::ostream& out, std::ostream& err);
    // Returns the process exit code: 0 after --help/--version or a clean stop, 1 when the
    // coordinator cannot start, 2 for a usage error.
    int run(const QStringList& arguments);

private:
    // nullopt with the exit code set: --help, --version or a usage error already answered.
    std::optional<CoordinatorOptions> parse(const QStringList& arguments, int& exitCode);

    std::ostream& m_out;
    std::ostream& m_err;
};

} // namespace tessera::coordinator
