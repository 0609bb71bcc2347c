// SPDX-License-Identifier: Apache-2.0
// tessera-coordinator: admission, stage assignment and shard serving (see core/coordinator/).
#include "CoordinatorCommandLine.h"
#include "engine/ComputeThreads.h"

#include <QCoreApplication>

#include <iostream>

int main(int argc, char** argv) {
    // Qt's own poll() dispatcher instead of glib's: with 10,000 node sessions open, glib's
    // per-iteration source checks and its O(n) socket-notifier removal were a quarter of the
    // coordinator's CPU (perf); see BENCHMARKS.md. An explicit QT_NO_GLIB=0 still wins.
    if (!qEnvironmentVariableIsSet("QT_NO_GLIB"))
        qputenv("QT_NO_GLIB", "1");
    // The coordinator decodes and checks every returned frame and recomputes audits: small
    // operations, between which a pool of intra-op threads spins on CPU the nodes of a shared machine
    // need (bench_trust, BENCHMARKS.md "Trust"). One thread each, unless OMP_NUM_THREADS says more.
    if (!qEnvironmentVariableIsSet("OMP_NUM_THREADS"))
        tessera::gpu::setComputeThreads(1);
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("tessera-coordinator"));
    QCoreApplication::setOrganizationName(QStringLiteral("Tessera"));
    tessera::coordinator::CoordinatorCommandLine commandLine(std::cout, std::cerr);
    return commandLine.run(QCoreApplication::arguments());
}
